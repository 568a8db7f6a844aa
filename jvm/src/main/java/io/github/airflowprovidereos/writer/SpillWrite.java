package io.github.airflowprovidereos.writer;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * One batch's spill, on the driver: resolves the folder, ships the settings, keeps the tasks' reports.
 *
 * <p>Spark's commit coordinator stays on: of two attempts of a partition (a retry, a speculative
 * copy) at most one reports its file, and the Python driver reads only reported files, so a
 * losing attempt's file (complete or not) is never read, only removed with the batch's folder.
 */
final class SpillWrite extends OneBatchWrite {
    private final SpillPlan plan;
    private final StructType schema;

    SpillWrite(LogicalWriteInfo info) {
        this.plan = SpillPlan.parse(info.options().get(SpillPlan.OPTION));
        this.schema = info.schema();
    }

    @Override
    public String description() {
        return "eos driver writer's spill, batch " + plan.batchId;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        // The session's configuration, the one Spark resolves the checkpoint with (the context's plus the
        // session's settings, e.g. s3a credentials), goes with the tasks as Spark's file writers ship
        // theirs: a YARN executor's own may name another default filesystem, or none.
        Configuration conf = SparkSession.active().sessionState().newHadoopConf();
        Path folder = new Path(plan.folder);
        String qualified;
        try {
            qualified = folder.getFileSystem(conf).makeQualified(folder).toString();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the filesystem of the spill folder " + plan.folder, e);
        }
        SQLConf sql = SQLConf.get();
        SpillFile.Settings settings = new SpillFile.Settings(sql.arrowMaxRecordsPerBatch(),
                sql.arrowMaxBytesPerBatch(), sql.sessionLocalTimeZone(), sql.arrowUseLargeVarTypes());
        return new SpillWriterFactory(plan.at(qualified), schema, new SerializableConfiguration(conf), settings);
    }

    /** On, unlike the executor writers': of two attempts of a partition, only the authorised one reports. */
    @Override
    public boolean useCommitCoordinator() {
        return true;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        DriverRegistry.putReports(plan.reportKey, TaskReport.jsons(messages));
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        // Nothing is read of a failed spill: the Python driver removes the batch's folder.
    }
}
