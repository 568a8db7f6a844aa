package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Test-only fault points of the write task, the same names and arming as the Python writer's
 * ({@code airflow_provider_eos/spark/task_faults.py}): the Python driver reads the environment
 * ({@code EOS_FAULT_INJECTION} with its acknowledgement) and passes what it armed in the plan;
 * without it every point is inert.
 *
 * <p>A point fires once per run: the first task to create the claim file
 * {@code eos-fault-<driver pid>-<point>-<batch>.fired} fires, as in Python. What "kill the worker"
 * means here: the Python writer SIGKILLs its Python worker, which holds the producer; this writer
 * runs in the executor JVM, which in local mode is the driver's, so the task attempt dies as a
 * crash would leave it: its producer is closed without aborting or committing (its transaction
 * stays open on the broker) and the attempt fails, for Spark to retry. Killing the driver kills
 * the driver's processes and then halts this JVM, as the Python worker kills itself.
 */
public final class TaskFaults implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String TASK_AFTER_PRODUCE = "task_after_produce";
    public static final String TASK_AFTER_COMMIT = "task_after_commit";
    public static final String TASK_KILL_DRIVER = "task_kill_driver";
    public static final String TASK_STALL = "task_stall";
    /** The driver writer's {@code after_produce}, under executor writers. */
    public static final String KILL_DRIVER_BEFORE_COMMIT = "after_produce";
    /** The driver writer's {@code slow_transaction}, under executor writers. */
    public static final String SLOW_TRANSACTION = "slow_transaction";
    private static final int ANY_PARTITION = -1;

    /** What the task must do after a point fired. */
    public enum Outcome { NONE, CRASH_TASK }

    private final String point;
    private final long batchId;
    private final int partition;
    private final String report;
    private final long[] driverPids;
    private final double stallS;
    private final String claimDir;

    private TaskFaults(String point, long batchId, int partition, String report, long[] driverPids, double stallS,
                       String claimDir) {
        this.point = point;
        this.batchId = batchId;
        this.partition = partition;
        this.report = report;
        this.driverPids = driverPids;
        this.stallS = stallS;
        this.claimDir = claimDir;
    }

    static TaskFaults parse(JsonNode node) {
        if (node == null || node.isNull()) {
            return new TaskFaults(null, -1, ANY_PARTITION, null, new long[0], 0, null);
        }
        JsonNode pids = node.get("driver_pids");
        long[] driverPids = new long[pids.size()];
        for (int i = 0; i < driverPids.length; i++) {
            driverPids[i] = pids.get(i).asLong();
        }
        JsonNode report = node.get("report");
        return new TaskFaults(node.get("point").asText(), node.get("batch_id").asLong(),
                node.get("partition").asInt(), report == null || report.isNull() ? null : report.asText(),
                driverPids, node.get("stall_s").asDouble(), node.get("claim_dir").asText());
    }

    /**
     * The task reached {@code at} for Kafka partition {@code kafkaPartition} of batch {@code batch}.
     *
     * @return {@link Outcome#CRASH_TASK} when the task must die as a crashed attempt
     */
    public Outcome hit(String at, long batch, int kafkaPartition) {
        if (point == null || !point.equals(at) || batchId != batch) {
            return Outcome.NONE;
        }
        if ((partition != ANY_PARTITION && partition != kafkaPartition) || !claim()) {
            return Outcome.NONE;
        }
        String where = at + " batch " + batch + " partition " + kafkaPartition;
        if (at.equals(TASK_STALL) || at.equals(SLOW_TRANSACTION)) {
            report(String.format(Locale.ROOT, "EOS-FAULT fired: %s, stalling %.0fs in executor JVM %d", where, stallS,
                    ProcessHandle.current().pid()));
            sleep((long) (stallS * 1000));
            return Outcome.NONE;
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
