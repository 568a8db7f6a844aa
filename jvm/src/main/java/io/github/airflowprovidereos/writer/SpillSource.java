package io.github.airflowprovidereos.writer;

/**
 * The data source the driver writer spills a micro-batch's output with ({@code executor_writer: jvm}):
 * {@code output.write.format("eos-spill").mode("append").option("eos.spill", ...).save()}.
 *
 * <p>Each task writes its partition's rows as one Arrow IPC stream file in the executor JVM, so
 * the spill starts no Python worker (airflow_provider_eos/spark/jvm_spill.py; docs/design-notes.md
 * note 43). Write only, any schema.
 */
public final class SpillSource extends WriteOnlySource {
    /** The format name (also the class name works). */
    public static final String SHORT_NAME = "eos-spill";

    public SpillSource() {
        super(SHORT_NAME, SpillWrite::new);
    }
}
