package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * One spill task: writes its partition's rows to its {@link SpillFile} and reports it.
 *
 * <p>Once the file is complete the task logs its {@code EOS-SPILL} line (as the Python spill
 * task does), announces {@code task_after_spill}, and returns the report the driver reads the
 * file by. An attempt that fails before reporting removes its file; one the observer crashes
 * leaves it, as a killed attempt would: the driver never reads it (it is in no report).
 */
final class SpillPartWriter implements DataWriter<InternalRow> {
    private final SpillPlan plan;
    private final RowRecords rows;
    private final SpillFile file;
    private final int partition;
    private final int attempt;
    private long written;
    private long dead;
    private boolean crashed;

    SpillPartWriter(SpillPlan plan, RowRecords rows, SpillFile file, int partition, int attempt) {
        this.plan = plan;
        this.rows = rows;
        this.file = file;
        this.partition = partition;
        this.attempt = attempt;
    }

    @Override
    public void write(InternalRow row) {
        file.write(row);
        written++;
        if (rows.isDeadLetter(row)) {
            dead++;
        }
    }

    @Override
    public WriterCommitMessage commit() {
        long bytes = file.finish();
        // Keys in sorted order, as the Python spill's line.
        ObjectNode report = WritePlan.JSON.createObjectNode();
        report.put("attempt", attempt);
        report.put("batch_id", plan.batchId);
        report.put("bytes", bytes);
        report.put("dead", dead);
        report.put("file", written > 0 ? file.path() : null);
        report.put("rows", written);
        report.put("spark_partition", partition);
        String line = report.toString();
        System.err.println("EOS-SPILL " + line);
        System.err.flush();
        TaskObserver observer = plan.observer.create();
        if (observer.reached(TaskObserver.Point.TASK_AFTER_SPILL, plan.batchId, partition)
                == TaskObserver.Outcome.CRASH_TASK) {
            crashed = true;
            throw TaskFailure.of("fault", "where", TaskObserver.Point.TASK_AFTER_SPILL.wireName(),
                    "batch_id", plan.batchId, "partition", partition);
        }
        return new TaskReport(line);
    }

    @Override
    public void abort() {
        if (!crashed && file.created()) {
            file.delete();
        }
    }

    @Override
    public void close() {
        file.close();
    }
}
