package io.github.airflowprovidereos.writer;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One micro-batch's write, on the driver: ships the plan to the tasks and keeps their stats.
 *
 * <p>Each task commits its own transaction, so the driver commits nothing here: {@link #commit}
 * only stores the tasks' stats for the Python driver, which then commits the input partitions that
 * had no task and logs one {@code EOS-TASK} line per task. Spark's commit coordinator is not used:
 * the transactional id is the single-writer guarantee (a second attempt's {@code initTransactions}
 * fences the first), and a coordinator's refusal would only fail a speculative copy that may be
 * the one that can still commit.
 */
final class ExecutorBatchWrite extends OneBatchWrite {
    static final String PLAN_OPTION = "eos.plan";
    private final WritePlan plan;
    private final RowRecords rows;

    ExecutorBatchWrite(LogicalWriteInfo info) {
        this.plan = WritePlan.parse(info.options().get(PLAN_OPTION));
        this.rows = new RowRecords(info.schema());
    }

    @Override
    public String description() {
        return "eos executor writer, batch " + plan.batchId;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        if (info.numPartitions() != plan.partitions.size()) {
            throw TaskFailure.of("scan_partitions", "spark_partitions", info.numPartitions(),
                    "partitions", plan.partitions.size());
        }
        Map<String, String>[] config = DriverRegistry.config(plan.configHandle);
        return new PartitionWriterFactory(plan, rows, new HashMap<>(config[0]), new HashMap<>(config[1]));
    }

    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        DriverRegistry.putReports(plan.reportKey, TaskReport.jsons(messages));
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        // The tasks that committed did so for good; their stats still tell the driver which ones.
        DriverRegistry.putReports(plan.reportKey, TaskReport.jsons(messages));
    }
}
