package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;

/**
 * One micro-batch's write, as the Python driver computed it (airflow_provider_eos/spark/jvm_writer.py).
 *
 * <p>Nothing here decides the protocol: the Python core ({@code core/sink_protocol.py}) computed,
 * per input partition, the exact committed states that mean "already written: skip" and "at the
 * start: produce", the offset and marker to commit, and the transactional id. The task only
 * compares what it reads with those values ({@link PartitionPlan#decide}); anything else fails
 * the task with what it found, and the Python driver names the inconsistency.
 */
public final class WritePlan implements Serializable {
    private static final long serialVersionUID = 1L;
    static final ObjectMapper JSON = new ObjectMapper();

    /** What a task does with its partition after reading the sink group's committed offset. */
    public enum Decision { PRODUCE, SKIP_REPLAY, INCONSISTENT }

    /** One input partition: the Spark partition reading it, and the values the task compares and commits. */
    public static final class PartitionPlan implements Serializable {
        private static final long serialVersionUID = 1L;
        public final int sparkPartition;
        public final String topic;
        public final int partition;
        public final String transactionalId;
        public final long commitOffset;
        public final String commitMetadata;
        public final long skipOffset;
        public final String skipMetadata;
        /** {@code null}: no committed offset means "at the start" (only "nothing committed" may). */
        public final Long produceOffset;
        public final String produceMetadata;
        public final boolean produceWhenNothingCommitted;
        /** How the Python side describes the Kafka range, for messages. */
        public final String describe;

        PartitionPlan(JsonNode node) {
            sparkPartition = node.get("spark_partition").asInt();
            topic = node.get("topic").asText();
            partition = node.get("partition").asInt();
            transactionalId = node.get("transactional_id").asText();
            commitOffset = node.get("commit").get("offset").asLong();
            commitMetadata = node.get("commit").get("metadata").asText();
            skipOffset = node.get("skip_when").get("offset").asLong();
            skipMetadata = node.get("skip_when").get("metadata").asText();
            JsonNode produce = node.get("produce_when");
            produceOffset = produce == null || produce.isNull() ? null : produce.get("offset").asLong();
            produceMetadata = produceOffset == null ? null : produce.get("metadata").asText();
            produceWhenNothingCommitted = node.get("produce_when_nothing_committed").asBoolean();
            describe = node.path("describe").asText(topic + "-" + partition);
        }

        /**
         * Match the sink group's committed offset against the Python-computed states.
         *
         * @param committed the group's offset and metadata for this partition, {@code null} when none
         * @return produce, skip (a replay of a committed partition), or inconsistent (neither state)
         */
        public Decision decide(OffsetAndMetadata committed) {
            if (committed == null) {
                return produceWhenNothingCommitted ? Decision.PRODUCE : Decision.INCONSISTENT;
            }
            String metadata = committed.metadata() == null ? "" : committed.metadata();
            if (committed.offset() == skipOffset && skipMetadata.equals(metadata)) {
                return Decision.SKIP_REPLAY;
            }
            if (produceOffset != null && committed.offset() == produceOffset && produceMetadata.equals(metadata)) {
                return Decision.PRODUCE;
            }
            return Decision.INCONSISTENT;
        }
    }

    public final String reportKey;
    public final String configHandle;
    public final String queryId;
    public final long batchId;
    public final String groupId;
    public final String outputTopic;
    /** {@code null}: the spec has no dead-letter topic. */
    public final String dlqTopic;
    public final long transactionTimeoutMs;
    /** How long a task's read of the group's offset waits for a pending commit (the Python core's rule). */
    public final long stableReadTimeoutMs;
    public final List<PartitionPlan> partitions;
    /** Who the tasks announce their points to (a test plug-in), or nobody. */
    final TaskObserverPlan observer;

    private WritePlan(JsonNode root) {
        reportKey = root.get("report_key").asText();
        configHandle = root.get("config_handle").asText();
        queryId = root.get("query_id").asText();
        batchId = root.get("batch_id").asLong();
        groupId = root.get("group_id").asText();
        outputTopic = root.get("output_topic").asText();
        JsonNode dlq = root.get("dlq_topic");
        dlqTopic = dlq == null || dlq.isNull() ? null : dlq.asText();
        transactionTimeoutMs = root.get("transaction_timeout_ms").asLong();
        stableReadTimeoutMs = root.get("stable_read_timeout_ms").asLong();
        List<PartitionPlan> found = new ArrayList<>();
        for (JsonNode node : root.get("partitions")) {
            found.add(new PartitionPlan(node));
        }
        for (int i = 0; i < found.size(); i++) {
            if (found.get(i).sparkPartition != i) {
                throw new IllegalArgumentException("the write plan's partitions are not indexed 0.." + (found.size() - 1));
            }
        }
        partitions = Collections.unmodifiableList(found);
        observer = TaskObserverPlan.parse(root.get("observer"));
    }

    /**
     * Parse the plan the Python driver passed in the write's {@code eos.plan} option.
     *
     * @param json the plan
     * @return the plan
     */
    public static WritePlan parse(String json) {
        if (json == null) {
            throw new IllegalArgumentException("the write has no eos.plan option: only the exactly-once sink may use it");
        }
        try {
            return new WritePlan(JSON.readTree(json));
        } catch (IOException e) {
            throw new UncheckedIOException("the eos.plan option is not valid JSON", e);
        }
    }

    /**
     * The plan of Spark partition {@code index}.
     *
     * @param index the task's partition index
     * @return its input partition's plan
     * @throws TaskFailure when the batch scan has no such partition
     */
    public PartitionPlan partition(int index) {
        if (index < 0 || index >= partitions.size()) {
            throw TaskFailure.of("scan_partition", "spark_partition", index, "partitions", partitions.size());
        }
        return partitions.get(index);
    }
}
