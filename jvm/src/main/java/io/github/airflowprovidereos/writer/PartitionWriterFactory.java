package io.github.airflowprovidereos.writer;

import java.util.HashMap;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/**
 * What Spark ships to every task of the batch: the plan, the column layout and the client settings.
 *
 * <p>The settings (which hold the SASL password and TLS keys) travel inside this serialized
 * factory, in the task's closure, as the Python writer's spec travels in its pickled task: never
 * in the write's options, which plans, the UI and event logs can show (docs/design-notes.md note 32).
 */
final class PartitionWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final WritePlan plan;
    private final RowRecords rows;
    private final HashMap<String, String> producerConfig;
    private final HashMap<String, String> adminConfig;

    PartitionWriterFactory(WritePlan plan, RowRecords rows, HashMap<String, String> producerConfig,
                           HashMap<String, String> adminConfig) {
        this.plan = plan;
        this.rows = rows;
        this.producerConfig = producerConfig;
        this.adminConfig = adminConfig;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        TaskContext context = TaskContext.get();
        int attempt = context == null ? 0 : context.attemptNumber();
        return new PartitionWriter(plan, producerConfig, adminConfig, rows, partitionId, attempt);
    }
}
