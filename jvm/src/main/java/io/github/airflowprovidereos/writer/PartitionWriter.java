package io.github.airflowprovidereos.writer;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One input partition's write (the Python writer's {@code PartitionWriteTask}, in the same order).
 *
 * <p>Before any row is produced: a retried attempt, or a partition this JVM's producer did not
 * write last, starts a fresh producer, whose {@code initTransactions} fences the earlier holder and aborts its open
 * transaction (a stable read behind a dead attempt's pending offsets would wait for the
 * transaction timeout); then the group's committed offset is read and matched against the plan:
 * skip (marker N already there), produce, or fail naming what was found. To produce, the task
 * begins the transaction and first adds the partition's end offset with marker N, a request the
 * coordinator refuses to a producer another holder fenced: a cached producer found fenced is
 * replaced once and the decision taken again. Then {@link #write} produces every row and
 * {@link #commit} flushes and commits: the task commits its own transaction.
 *
 * <p>The opening is round trips to the coordinator and the group (an {@code initTransactions} of
 * 100-200 ms for a new producer, a few ms otherwise), so it runs on an opener thread from the
 * constructor on, while Spark reads the first rows; the first {@link #write} (or the
 * {@link #commit} of a partition whose rows the transform all dropped) waits for it. No record is
 * sent before the opening decided to produce and added the offsets: the order above is unchanged.
 * The task thread holds the producer's lease throughout, and {@link #abort} and {@link #close}
 * first see the opening ended, so the producer is never used by two threads at once.
 */
final class PartitionWriter implements DataWriter<InternalRow> {
    private final WritePlan plan;
    private final WritePlan.PartitionPlan part;
    private final RowRecords rows;
    private final TransactionalProducers.Lease lease;
    private final TaskStats stats;
    private final TaskObserver observer;
    private final UTF8String topic;
    private final SendFailures sendFailures = new SendFailures();
    private Producer<byte[], byte[]> producer;
    private long lapStart = System.nanoTime();
    private long opened;
    /** When the opening ended ({@code System.nanoTime()}; 0 until it did): the end of the wait for it. */
    private long openingEnded;
    private boolean inTransaction;
    private boolean crashed;
    private long deadWithoutTopic;
    /** The opening ({@link #start}), on {@link #OPENERS}; {@code null} once the task thread took its outcome. */
    private CompletableFuture<Void> opening;
    /** The opener thread while it runs this task's opening (guarded by {@code this}): what an abort interrupts. */
    private Thread opener;

    /** The openers: daemon threads, as many as tasks open at once in this JVM, idle ones ended after a minute. */
    private static final ExecutorService OPENERS = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "eos-writer-opener");
        thread.setDaemon(true);
        return thread;
    });

    /** The first failed delivery of the transaction; one instance serves every record. */
    private static final class SendFailures implements Callback {
        volatile Exception first;

        @Override
        public void onCompletion(RecordMetadata metadata, Exception exception) {
            if (exception != null && first == null) {
                first = exception;
            }
        }
    }

    PartitionWriter(WritePlan plan, Map<String, String> producerConfig, Map<String, String> adminConfig,
                    RowRecords rows, int sparkPartition, int attempt) {
        this.plan = plan;
        this.part = plan.partition(sparkPartition);
        this.rows = rows;
        this.topic = UTF8String.fromString(part.topic);
        this.stats = new TaskStats(plan.batchId, sparkPartition, attempt, part.topic, part.partition);
        this.observer = plan.observer.create();
        this.lease = TransactionalProducers.acquire(part.transactionalId, producerConfig);
        try {
            // The task's class loader (Spark's, with the job's jars) for what the Kafka clients load by name (SASL).
            ClassLoader loader = Thread.currentThread().getContextClassLoader();
            opening = CompletableFuture.runAsync(() -> open(adminConfig, attempt, loader), OPENERS);
        } catch (RuntimeException | Error e) {
            // Spark neither aborts nor closes a writer whose creation failed.
            lease.release();
            throw e;
        }
    }

    /** {@link #start} on the opener thread, which an abort may interrupt while it runs (a killed task's). */
    private void open(Map<String, String> adminConfig, int attempt, ClassLoader loader) {
        Thread thread = Thread.currentThread();
        ClassLoader own = thread.getContextClassLoader();
        synchronized (this) {
            opener = thread;
        }
        thread.setContextClassLoader(loader);
        try {
            start(adminConfig, attempt);
        } finally {
            thread.setContextClassLoader(own);
            synchronized (this) {
                opener = null;
                Thread.interrupted(); // an interrupt meant for this opening only: the pool's next task starts clean
            }
        }
    }

    /**
     * Wait for the opening and take its outcome: the decision and the transaction are this thread's now.
     * A failed opening has given the producer up; the task fails with the opening's error.
     */
    private void awaitOpening() {
        if (opening == null) {
            return;
        }
        long waitStart = System.nanoTime();
        Throwable failure = endOpening(false);
        // Until the opening ended, not until this thread ran again: on a busy machine the wake-up comes later,
        // and the wait is part of the opening's time (open_ms) by its definition.
        long ended = openingEnded != 0 ? openingEnded : System.nanoTime();
        stats.openWaitMs = Math.max(0L, ended - waitStart) / 1_000_000L;
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (failure instanceof Error error) {
            throw error;
        }
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
    }

    /**
     * Wait until the opening has ended (once): an abort or close must not race it for the producer.
     *
     * @param interrupt interrupt it if it still runs (an abort: a killed task's Kafka calls end now, as they did
     *     when the opening ran on the task thread)
     * @return the opening's failure, the producer given up; {@code null} when it succeeded or had already ended
     */
    private Throwable endOpening(boolean interrupt) {
        CompletableFuture<Void> pending = opening;
        if (pending == null) {
            return null;
        }
        opening = null;
        if (interrupt) {
            synchronized (this) {
                if (opener != null) {
                    opener.interrupt();
                }
            }
        }
        try {
            pending.join();
            return null;
        } catch (CompletionException e) {
            abandon();
            return e.getCause();
        }
    }

    private void start(Map<String, String> adminConfig, int attempt) {
        Long last = lease.lastCommittedBatch();
        if (attempt > 0 || (last != null && last != plan.batchId - 1)) {
            // A retry: the earlier attempt may have died inside its transaction, its offsets still pending.
            // Otherwise another JVM wrote this partition since: the cached producer is fenced for sure.
            lease.drop();
        }
        TopicPartition tp = new TopicPartition(part.topic, part.partition);
        for (int round = 0; round < 2; round++) {
            Producer<byte[], byte[]> candidate;
            long beforeInit = System.nanoTime();
            try {
                candidate = lease.producer();
            } catch (RuntimeException e) {
                throw TaskFailure.kafka(e, "init", part.transactionalId, plan.batchId, false);
            }
            if (!stats.producerCreated && lease.created()) { // this round created it
                stats.producerCreated = true;
                stats.initMs += (System.nanoTime() - beforeInit) / 1_000_000L;
            }
            OffsetAndMetadata committed = readCommitted(adminConfig, tp);
            WritePlan.Decision decision = part.decide(committed);
            if (decision == WritePlan.Decision.SKIP_REPLAY) {
                stats.action = "skip_replay";
                openingEnded = System.nanoTime();
                return;
            }
            if (decision == WritePlan.Decision.INCONSISTENT) {
                throw TaskFailure.of("inconsistent", "topic", part.topic, "partition", part.partition,
                        "offset", committed == null ? null : committed.offset(),
                        "metadata", committed == null ? null : committed.metadata());
            }
            producer = candidate; // from here on, a failure aborts (or drops) this producer's transaction
            try {
                candidate.beginTransaction();
                inTransaction = true;
                opened = System.nanoTime();
                // First, so a producer another holder fenced is found before any row is read.
                candidate.sendOffsetsToTransaction(
                        Map.of(tp, new OffsetAndMetadata(part.commitOffset, part.commitMetadata)),
                        new ConsumerGroupMetadata(plan.groupId));
            } catch (RuntimeException e) {
                if (!lease.created() && TaskFailure.isFenced(e)) {
                    lease.drop();
                    producer = null;
                    inTransaction = false;
                    stats.producerReplaced = true;
                    continue;
                }
                throw failed(e, "offsets");
            }
            openingEnded = System.nanoTime();
            stats.openMs = (openingEnded - lapStart) / 1_000_000L;
            return;
        }
        throw TaskFailure.of("fenced_twice", "transactional_id", part.transactionalId, "batch_id", plan.batchId);
    }

    private OffsetAndMetadata readCommitted(Map<String, String> adminConfig, TopicPartition tp) {
        long started = System.nanoTime();
        try {
            return CommittedOffsets.read(adminConfig, plan.groupId, tp, plan.stableReadTimeoutMs);
        } catch (CommittedOffsets.StillPending e) {
            throw TaskFailure.of("offsets_pending", "group_id", plan.groupId, "topic", part.topic,
                    "partition", part.partition, "waited_ms", e.waitedMs,
                    "transaction_timeout_ms", plan.transactionTimeoutMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the group's offsets", e);
        } catch (Exception e) {
            // No answer is its own fact: the Python writer's read of the same raises KafkaNoAnswerError.
            throw TaskFailure.of("group_offsets", "group_id", plan.groupId, "topic", part.topic,
                    "partition", part.partition, "detail", String.valueOf(e),
                    "no_answer", CommittedOffsets.noAnswer(e),
                    "waited_ms", (System.nanoTime() - started) / 1_000_000L);
        }
    }

    @Override
    public void write(InternalRow row) {
        awaitOpening();
        if (producer == null) {
            return; // skip_replay: the partition's output is already committed
        }
        String foreign = rows.foreignSource(row, topic, part.partition);
        if (foreign != null) {
            throw TaskFailure.of("foreign_rows", "spark_partition", stats.sparkPartition, "column", foreign,
                    "found", rows.sourceValue(row, foreign));
        }
        boolean dead = rows.isDeadLetter(row);
        if (dead) {
            if (plan.dlqTopic == null) {
                deadWithoutTopic++; // refused in commit, with the count, before the transaction commits
                return;
            }
            stats.rowsDlq++;
        } else {
            stats.rowsOut++;
        }
        // Built before the send: a row the record cannot hold fails the task naming it, not as a Kafka error.
        ProducerRecord<byte[], byte[]> record = rows.record(row, plan.outputTopic, plan.dlqTopic, dead);
        try {
            producer.send(record, sendFailures);
        } catch (RuntimeException e) {
            throw failed(e, "produce");
        }
    }

    @Override
    public WriterCommitMessage commit() {
        awaitOpening();
        if (producer == null) {
            return new TaskReport(stats.toJson());
        }
        if (deadWithoutTopic > 0) {
            abandon();
            throw TaskFailure.of("no_dlq_topic", "dead", deadWithoutTopic);
        }
        try {
            producer.flush();
            if (sendFailures.first != null) {
                throw sendFailures.first instanceof RuntimeException
                        ? (RuntimeException) sendFailures.first : new IllegalStateException(sendFailures.first);
            }
            stats.produceMs = lap();
            announce(TaskObserver.Point.TASK_AFTER_PRODUCE);
            commitTransaction();
            inTransaction = false;
            lease.committed(plan.batchId);
            stats.commitMs = lap();
        } catch (TaskFailure e) {
            throw e;
        } catch (RuntimeException e) {
            throw failed(e, "produce");
        }
        announce(TaskObserver.Point.TASK_AFTER_COMMIT);
        return new TaskReport(stats.toJson());
    }

    private void commitTransaction() {
        long deadline = opened + plan.transactionTimeoutMs * 1_000_000L;
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (RetriableException e) {
                // The Java producer lets a commit that timed out be called again; the outcome is the broker's.
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    /** Tell the plan's observer where the task is; it may make the task die as a crashed attempt. */
    private void announce(TaskObserver.Point point) {
        if (observer.reached(point, plan.batchId, part.partition) == TaskObserver.Outcome.CRASH_TASK) {
            crashed = true;
            lease.drop(); // the crashed attempt's producer goes with it, its transaction left as it was
            throw TaskFailure.of("fault", "where", point.wireName(), "batch_id", plan.batchId,
                    "partition", part.partition);
        }
    }

    /** Abort after a Kafka failure (or give the producer up) and name the failure for the driver. */
    private TaskFailure failed(RuntimeException error, String stage) {
        boolean outlived = inTransaction && (System.nanoTime() - opened) / 1_000_000L >= plan.transactionTimeoutMs;
        abandon();
        return TaskFailure.kafka(error, stage, part.transactionalId, plan.batchId, outlived);
    }

    /**
     * End the open transaction: abort it if the producer still can, and drop the producer either
     * way (simpler than the Python writer's keep-after-abortable-error, at the cost of one
     * {@code initTransactions} in the next task after a failure; that init also aborts whatever
     * an abort here could not).
     */
    private void abandon() {
        if (inTransaction && producer != null && !crashed) {
            try {
                producer.abortTransaction();
            } catch (RuntimeException ignored) {
                // The next producer's initTransactions aborts it.
            }
        }
        inTransaction = false;
        lease.drop();
        producer = null;
    }

    @Override
    public void abort() {
        endOpening(true);
        if (!crashed && inTransaction) {
            abandon();
        }
    }

    @Override
    public void close() {
        try {
            endOpening(false);
        } finally {
            lease.release();
        }
    }

    private long lap() {
        long now = System.nanoTime();
        long elapsed = (now - lapStart) / 1_000_000L;
        lapStart = now;
        return elapsed;
    }
}
