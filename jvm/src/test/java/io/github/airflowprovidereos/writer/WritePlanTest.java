package io.github.airflowprovidereos.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.junit.jupiter.api.Test;

/** The task's matching of the Python-computed states, and its stats line (the Python tests cover the states). */
class WritePlanTest {
    private static final String PLAN = "{\"report_key\":\"q/3/n\",\"config_handle\":\"h\",\"query_id\":\"q\","
            + "\"batch_id\":3,\"group_id\":\"g\",\"output_topic\":\"out\",\"dlq_topic\":null,"
            + "\"transaction_timeout_ms\":60000,\"stable_read_timeout_ms\":90000,\"observer\":null,\"partitions\":["
            + "{\"spark_partition\":0,\"topic\":\"in\",\"partition\":0,\"transactional_id\":\"p-0_0\","
            + "\"commit\":{\"offset\":20,\"metadata\":\"eos1:q:3\"},\"skip_when\":{\"offset\":20,\"metadata\":\"eos1:q:3\"},"
            + "\"produce_when\":{\"offset\":10,\"metadata\":\"eos1:q:2\"},\"produce_when_nothing_committed\":false},"
            + "{\"spark_partition\":1,\"topic\":\"in\",\"partition\":1,\"transactional_id\":\"p-0_1\","
            + "\"commit\":{\"offset\":5,\"metadata\":\"eos1:q:3\"},\"skip_when\":{\"offset\":5,\"metadata\":\"eos1:q:3\"},"
            + "\"produce_when\":null,\"produce_when_nothing_committed\":true}]}";

    @Test
    void matchesOnlyTheExactStates() {
        WritePlan plan = WritePlan.parse(PLAN);
        WritePlan.PartitionPlan p0 = plan.partition(0);
        assertEquals(WritePlan.Decision.SKIP_REPLAY, p0.decide(new OffsetAndMetadata(20, "eos1:q:3")));
        assertEquals(WritePlan.Decision.PRODUCE, p0.decide(new OffsetAndMetadata(10, "eos1:q:2")));
        assertEquals(WritePlan.Decision.INCONSISTENT, p0.decide(null));
        assertEquals(WritePlan.Decision.INCONSISTENT, p0.decide(new OffsetAndMetadata(20, "eos1:q:2")));
        assertEquals(WritePlan.Decision.INCONSISTENT, p0.decide(new OffsetAndMetadata(10, "eos1:q:02")));
        assertEquals(WritePlan.Decision.INCONSISTENT, p0.decide(new OffsetAndMetadata(10, "")));
        WritePlan.PartitionPlan p1 = plan.partition(1);
        assertEquals(WritePlan.Decision.PRODUCE, p1.decide(null));
        assertEquals(WritePlan.Decision.SKIP_REPLAY, p1.decide(new OffsetAndMetadata(5, "eos1:q:3")));
        assertEquals(WritePlan.Decision.INCONSISTENT, p1.decide(new OffsetAndMetadata(0, "")));
    }

    @Test
    void aMissingPartitionFailsWithAPayloadThePythonDriverReads() throws Exception {
        TaskFailure failure = null;
        try {
            WritePlan.parse(PLAN).partition(2);
        } catch (TaskFailure e) {
            failure = e;
        }
        assertTrue(failure != null && failure.getMessage().startsWith(TaskFailure.TAG));
        String encoded = failure.getMessage().substring(TaskFailure.TAG.length()).split(" ", 2)[0];
        JsonNode payload = WritePlan.JSON.readTree(new String(Base64.getDecoder().decode(encoded), StandardCharsets.UTF_8));
        assertEquals("scan_partition", payload.get("kind").asText());
        assertEquals(2, payload.get("spark_partition").asInt());
    }

    @Test
    void statsCarryThePythonWritersFields() throws Exception {
        TaskStats stats = new TaskStats(3, 1, 0, "in", 1);
        stats.rowsOut = 7;
        JsonNode json = WritePlan.JSON.readTree(stats.toJson());
        for (String field : new String[] {"batch_id", "spark_partition", "attempt", "topic", "partition", "action",
            "rows_out", "rows_dlq", "produce_ms", "commit_ms", "open_ms", "init_ms", "producer_created", "producer_replaced"}) {
            assertTrue(json.has(field), field);
        }
        assertEquals("produce", json.get("action").asText());
        assertEquals(7, json.get("rows_out").asLong());
    }
}
