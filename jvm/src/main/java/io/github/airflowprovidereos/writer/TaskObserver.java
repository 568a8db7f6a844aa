package io.github.airflowprovidereos.writer;

/**
 * What a write task announces its points to: the JVM half of the Python sink's {@code TaskObserver}
 * ({@code airflow_provider_eos/spark/sink_points.py}), with the same point names.
 *
 * <p>The product only announces; nobody listens unless a plug-in (the crash tests' fault injection,
 * {@code jvm/src/test}) named an implementation in the write's plan. It is created in the task, from
 * the task's class loader, so its jar only needs to reach the executors ({@code SparkContext.addJar}).
 * An implementation has a public constructor taking its configuration as one JSON string.
 */
public interface TaskObserver {
    /** Where a write task is, for the Kafka partition it writes (the Spark partition, for a spill task). */
    enum Point {
        /** The partition's rows produced and flushed, its transaction open, not committed. */
        TASK_AFTER_PRODUCE("task_after_produce"),
        /** The partition's transaction committed, the task not yet reported. */
        TASK_AFTER_COMMIT("task_after_commit"),
        /** The driver writer's spill task: its file complete, the task not yet reported. */
        TASK_AFTER_SPILL("task_after_spill");

        private final String wireName;

        Point(String wireName) {
            this.wireName = wireName;
        }

        /** The point's name as the Python sink spells it. */
        public String wireName() {
            return wireName;
        }
    }

    /** What the task does after announcing a point. */
    enum Outcome {
        /** Go on. */
        CONTINUE,
        /** Die as a crashed attempt: the producer is dropped without ending its transaction. */
        CRASH_TASK
    }

    /** The observer of a plan that names none. */
    TaskObserver NONE = (point, batchId, kafkaPartition) -> Outcome.CONTINUE;

    /**
     * A task of batch {@code batchId} reached {@code point} for Kafka partition {@code kafkaPartition}.
     *
     * @return what the task does next
     */
    Outcome reached(Point point, long batchId, int kafkaPartition);
}
