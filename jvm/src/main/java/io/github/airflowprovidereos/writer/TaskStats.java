package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.TreeMap;

/**
 * One task's {@code EOS-TASK} line: the fields of the Python writer's {@code TaskStats}
 * ({@code airflow_provider_eos/spark/partition_writer.py}), so the driver logs and sums both alike.
 */
public final class TaskStats {
    public final long batchId;
    public final int sparkPartition;
    public final int attempt;
    public final String topic;
    public final int partition;
    public String action = "produce";
    public long rowsOut;
    public long rowsDlq;
    public long produceMs;
    public long commitMs;
    /** Of {@code produceMs}, the opening: the producer's init, the offsets read, begin and offsets added. */
    public long openMs;
    /** Of {@code openMs}, what the task waited for at its first row: the rest ran while Spark read the rows. */
    public long openWaitMs;
    /** Of {@code openMs}, creating the producer and its {@code initTransactions} (0 with a cached producer). */
    public long initMs;
    /** The task created its producer (first use in this JVM, or the cached one could not serve). */
    public boolean producerCreated;
    /** The cached producer was found fenced by another holder of the id and replaced before any row was read. */
    public boolean producerReplaced;

    public TaskStats(long batchId, int sparkPartition, int attempt, String topic, int partition) {
        this.batchId = batchId;
        this.sparkPartition = sparkPartition;
        this.attempt = attempt;
        this.topic = topic;
        this.partition = partition;
    }

    /** The JSON line, keys sorted as the Python writer's. */
    public String toJson() {
        Map<String, Object> fields = new TreeMap<>();
        fields.put("batch_id", batchId);
        fields.put("spark_partition", sparkPartition);
        fields.put("attempt", attempt);
        fields.put("topic", topic);
        fields.put("partition", partition);
        fields.put("action", action);
        fields.put("rows_out", rowsOut);
        fields.put("rows_dlq", rowsDlq);
        fields.put("produce_ms", produceMs);
        fields.put("commit_ms", commitMs);
        fields.put("open_ms", openMs);
        fields.put("open_wait_ms", openWaitMs);
        fields.put("init_ms", initMs);
        fields.put("producer_created", producerCreated);
        fields.put("producer_replaced", producerReplaced);
        // The Python writer names its worker's interpreter here; this writer runs in the executor JVM.
        fields.put("python", null);
        fields.put("writer", "jvm");
        try {
            return WritePlan.JSON.writeValueAsString(fields);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
