package io.github.airflowprovidereos.writer;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A task's {@code EOS-TASK} stats, carried to the driver with the task's result. */
final class TaskReport implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final String json;

    TaskReport(String json) {
        this.json = json;
    }
}
