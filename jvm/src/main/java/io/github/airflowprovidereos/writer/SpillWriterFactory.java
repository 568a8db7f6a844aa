package io.github.airflowprovidereos.writer;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * What Spark ships to every spill task: the plan, the columns, the session's Hadoop configuration and
 * Spark's Arrow settings.
 */
final class SpillWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;
    private final SpillPlan plan;
    private final StructType schema;
    private final RowRecords rows;
    private final SerializableConfiguration hadoopConf;
    private final SpillFile.Settings settings;

    SpillWriterFactory(SpillPlan plan, StructType schema, SerializableConfiguration hadoopConf,
                       SpillFile.Settings settings) {
        this.plan = plan;
        this.schema = schema;
        this.rows = new RowRecords(schema);
        this.hadoopConf = hadoopConf;
        this.settings = settings;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        TaskContext context = TaskContext.get();
        int attempt = context == null ? 0 : context.attemptNumber();
        // The task attempt id is unique in the SparkContext: a retry never writes over the attempt it replaces.
        SpillFile file = new SpillFile(plan.folder, partitionId + "-" + taskId + ".arrow", hadoopConf.value(), schema,
                settings);
        return new SpillPartWriter(plan, rows, file, partitionId, attempt);
    }
}
