package io.github.airflowprovidereos.writer;

/**
 * The data source the exactly-once sink writes a micro-batch to with {@code executor_writer: jvm}:
 * {@code batch.write.format("eos-executor-writer").mode("append").option("eos.plan", ...).save()}.
 *
 * <p>Write only, any schema (the output frame's columns are checked by {@link RowRecords}).
 */
public final class ExecutorWriterSource extends WriteOnlySource {
    /** The format name (also the class name works). */
    public static final String SHORT_NAME = "eos-executor-writer";

    public ExecutorWriterSource() {
        super(SHORT_NAME, ExecutorBatchWrite::new);
    }
}
