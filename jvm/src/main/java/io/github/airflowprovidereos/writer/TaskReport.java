package io.github.airflowprovidereos.writer;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A task's report (an {@code EOS-TASK} or {@code EOS-SPILL} object), carried to the driver with the task's result. */
final class TaskReport implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final String json;

    TaskReport(String json) {
        this.json = json;
    }

    /** The reports among a write's commit messages (Spark passes null for a task that reported none). */
    static List<String> jsons(WriterCommitMessage[] messages) {
        List<String> found = new ArrayList<>();
        for (WriterCommitMessage message : messages) {
            if (message instanceof TaskReport) {
                found.add(((TaskReport) message).json);
            }
        }
        return found;
    }
}
