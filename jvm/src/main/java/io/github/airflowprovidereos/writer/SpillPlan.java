package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;

/**
 * One batch's spill, as the Python driver names it (airflow_provider_eos/spark/jvm_spill.py):
 * the write's folder, the batch, where the driver JVM keeps the tasks' reports, and who observes
 * the tasks. The folder is resolved against the driver's Hadoop configuration before it ships
 * ({@link #at}), as Spark resolves the checkpoint location it lies under.
 */
final class SpillPlan implements Serializable {
    private static final long serialVersionUID = 1L;
    static final String OPTION = "eos.spill";

    final String folder;
    final long batchId;
    final String reportKey;
    final TaskObserverPlan observer;

    private SpillPlan(String folder, long batchId, String reportKey, TaskObserverPlan observer) {
        this.folder = folder;
        this.batchId = batchId;
        this.reportKey = reportKey;
        this.observer = observer;
    }

    /** The {@code eos.spill} option: {@code {"folder", "batch_id", "report_key", "observer"}}. */
    static SpillPlan parse(String json) {
        if (json == null) {
            throw new IllegalArgumentException("the spill write has no " + OPTION + " option");
        }
        try {
            JsonNode node = WritePlan.JSON.readTree(json);
            return new SpillPlan(node.get("folder").asText(), node.get("batch_id").asLong(),
                    node.get("report_key").asText(), TaskObserverPlan.parse(node.get("observer")));
        } catch (IOException e) {
            throw new UncheckedIOException("the " + OPTION + " option is not JSON", e);
        } catch (NullPointerException e) {
            throw new IllegalArgumentException("the " + OPTION + " option lacks folder, batch_id or report_key: "
                    + json, e);
        }
    }

    /** The same plan with the folder as the filesystem qualified it. */
    SpillPlan at(String qualifiedFolder) {
        return new SpillPlan(qualifiedFolder, batchId, reportKey, observer);
    }
}
