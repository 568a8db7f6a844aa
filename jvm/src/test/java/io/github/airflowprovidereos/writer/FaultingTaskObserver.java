package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * The crash tests' faults at the write task's points, the JVM half of {@code tests/support/faults/tasks.py}
 * (same names, same arming): the Python plug-in reads the environment ({@code EOS_FAULT_INJECTION}
 * with its acknowledgement), names this class in the write's plan with what it armed, and adds this
 * test jar for the executors. Never in the product jar.
 *
 * <p>A point fires once per run: the first task to create the claim file
 * {@code eos-fault-<driver pid>-<point>-<batch>.fired} fires, as in Python. What "kill the worker"
 * means here: the Python writer SIGKILLs its Python worker, which holds the producer; this writer
 * runs in the executor JVM, which in local mode is the driver's, so the task attempt dies as a
 * crash would leave it: its producer is closed without aborting or committing (its transaction
 * stays open on the broker) and the attempt fails, for Spark to retry. Killing the driver kills
 * the driver's processes and then halts this JVM, as the Python worker kills itself.
 */
public final class FaultingTaskObserver implements TaskObserver {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static final String TASK_AFTER_PRODUCE = "task_after_produce";
    public static final String TASK_AFTER_COMMIT = "task_after_commit";
    public static final String TASK_KILL_DRIVER = "task_kill_driver";
    public static final String TASK_STALL = "task_stall";
    /** The driver writer's {@code after_produce}, under executor writers. */
    public static final String KILL_DRIVER_BEFORE_COMMIT = "after_produce";
    /** The driver writer's {@code slow_transaction}, under executor writers. */
    public static final String SLOW_TRANSACTION = "slow_transaction";
    private static final int ANY_PARTITION = -1;

    private final String point;
    private final long batchId;
    private final int partition;
    private final String report;
    private final long[] driverPids;
    private final double stallS;
    private final String claimDir;

    /**
     * @param config what the Python plug-in armed: point, batch_id, partition, report, driver_pids, stall_s, claim_dir
     * @throws IOException when the configuration is not JSON
     */
    public FaultingTaskObserver(String config) throws IOException {
        JsonNode node = JSON.readTree(config);
        JsonNode pids = node.get("driver_pids");
        long[] driverPids = new long[pids.size()];
        for (int i = 0; i < driverPids.length; i++) {
            driverPids[i] = pids.get(i).asLong();
        }
        JsonNode reportTo = node.get("report");
        this.point = node.get("point").asText();
        this.batchId = node.get("batch_id").asLong();
        this.partition = node.get("partition").asInt();
        this.report = reportTo == null || reportTo.isNull() ? null : reportTo.asText();
        this.driverPids = driverPids;
        this.stallS = node.get("stall_s").asDouble();
        this.claimDir = node.get("claim_dir").asText();
    }

    @Override
    public Outcome reached(Point at, long batch, int kafkaPartition) {
        String[] faults = switch (at) {
            case TASK_AFTER_PRODUCE -> new String[] {TASK_STALL, SLOW_TRANSACTION, KILL_DRIVER_BEFORE_COMMIT,
                TASK_AFTER_PRODUCE};
            case TASK_AFTER_COMMIT -> new String[] {TASK_AFTER_COMMIT, TASK_KILL_DRIVER};
            // The driver writer's spill task, as tests/support/faults/tasks.py arms it (FAULTS_AT).
            case TASK_AFTER_SPILL -> new String[] {TASK_AFTER_PRODUCE};
        };
        for (String fault : faults) {
            if (hit(fault, batch, kafkaPartition) == Outcome.CRASH_TASK) {
                return Outcome.CRASH_TASK;
            }
        }
        return Outcome.CONTINUE;
    }

    /**
     * The task reached {@code at} for Kafka partition {@code kafkaPartition} of batch {@code batch}.
     *
     * @return {@link Outcome#CRASH_TASK} when the task must die as a crashed attempt
     */
    private Outcome hit(String at, long batch, int kafkaPartition) {
        if (point == null || !point.equals(at) || batchId != batch) {
            return Outcome.CONTINUE;
        }
        if ((partition != ANY_PARTITION && partition != kafkaPartition) || !claim()) {
            return Outcome.CONTINUE;
        }
        String where = at + " batch " + batch + " partition " + kafkaPartition;
        if (at.equals(TASK_STALL) || at.equals(SLOW_TRANSACTION)) {
            report(String.format(Locale.ROOT, "EOS-FAULT fired: %s, stalling %.0fs in executor JVM %d", where, stallS,
                    ProcessHandle.current().pid()));
            sleep((long) (stallS * 1000));
            return Outcome.CONTINUE;
        }
        if (at.equals(TASK_KILL_DRIVER) || at.equals(KILL_DRIVER_BEFORE_COMMIT)) {
            report("EOS-FAULT fired: " + where + ", killing the driver");
            long self = ProcessHandle.current().pid();
            for (long pid : driverPids) {
                if (pid != self) {
                    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
            // This JVM goes too (in local mode it is the driver's), as a crashed host's would:
            // left alive it would commit the transaction the crash is meant to leave open.
            Runtime.getRuntime().halt(137);
        }
        report("EOS-FAULT fired: " + where + ", crashing the task attempt in executor JVM "
                + ProcessHandle.current().pid() + " (its producer closed without ending the transaction)");
        return Outcome.CRASH_TASK;
    }

    private boolean claim() {
        long owner = driverPids.length > 0 ? driverPids[0] : ProcessHandle.current().pid();
        Path file = Paths.get(claimDir, "eos-fault-" + owner + "-" + point + "-" + batchId + ".fired");
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        } catch (IOException e) {
            throw new IllegalStateException("cannot create the fault claim file " + file, e);
        }
    }

    private void report(String message) {
        System.err.println(message);
        System.err.flush();
        if (report == null) {
            return;
        }
        try (FileOutputStream out = new FileOutputStream(report, true)) {
            out.write((message + "\n").getBytes(StandardCharsets.UTF_8));
            out.getFD().sync();
        } catch (IOException e) {
            System.err.println("EOS-FAULT could not append to " + report + ": " + e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
