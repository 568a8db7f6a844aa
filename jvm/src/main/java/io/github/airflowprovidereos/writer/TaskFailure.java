package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.protocol.Errors;

/**
 * A write task's failure, with what the Python driver needs to raise the typed error the Python
 * writer raises for the same case ({@code airflow_provider_eos/spark/jvm_task_errors.py}).
 *
 * <p>Spark carries a failed task's exception to the driver as text (the stage failure's message),
 * so the facts travel in the message: {@code EOS-TASK-FAILURE:<base64 of a JSON object>}, base64
 * so that no metadata or broker text can break the framing. The {@code kind} names the case.
 */
public final class TaskFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;
    /** The tag the Python driver looks for in the stage failure's text. */
    public static final String TAG = "EOS-TASK-FAILURE:";

    private final Map<String, Object> payload;

    private TaskFailure(Map<String, Object> payload, Throwable cause) {
        super(TAG + encode(payload) + " " + payload, cause);
        this.payload = payload;
    }

    /** The facts, for tests. */
    public Map<String, Object> payload() {
        return payload;
    }

    /**
     * A failure of kind {@code kind} with key/value facts.
     *
     * @param kind the case, as the Python side names it
     * @param facts alternating keys and values
     * @return the exception to throw
     */
    public static TaskFailure of(String kind, Object... facts) {
        Map<String, Object> payload = new TreeMap<>();
        payload.put("kind", kind);
        for (int i = 0; i + 1 < facts.length; i += 2) {
            payload.put((String) facts[i], facts[i + 1]);
        }
        return new TaskFailure(payload, null);
    }

    /**
     * A Kafka client failure, named as the Python writer's classification names it.
     *
     * <p>The Java client's protocol error names are the broker's, which librdkafka's names share
     * ({@code PRODUCER_FENCED}, {@code TOPIC_AUTHORIZATION_FAILED}...), so the same
     * {@code core/sink_failures.py} classification applies; errors without a protocol code
     * are {@code _JVM}.
     *
     * @param error the client's exception (its cause chain is searched for the protocol error)
     * @param stage init, offsets or produce
     * @param transactionalId the producer's id
     * @param batchId the batch
     * @param outlivedTimeout the transaction had been open at least {@code transaction.timeout.ms}
     * @return the exception to throw
     */
    public static TaskFailure kafka(Throwable error, String stage, String transactionalId, long batchId,
                                    boolean outlivedTimeout) {
        ApiException api = apiException(error);
        Map<String, Object> payload = new TreeMap<>();
        payload.put("kind", "kafka");
        payload.put("code", api == null ? "_JVM" : Errors.forException(api).name());
        payload.put("retriable", api instanceof RetriableException);
        payload.put("fatal", isFenced(error));
        payload.put("detail", String.valueOf(api == null ? error : api));
        payload.put("stage", stage);
        payload.put("transactional_id", transactionalId);
        payload.put("batch_id", batchId);
        payload.put("outlived_timeout", outlivedTimeout);
        List<String> refused = new ArrayList<>();
        if (api instanceof TopicAuthorizationException) {
            refused.addAll(((TopicAuthorizationException) api).unauthorizedTopics());
        }
        payload.put("unauthorized_topics", refused);
        return new TaskFailure(payload, error);
    }

    /** The innermost protocol error in {@code error}'s cause chain, or {@code null}. */
    static ApiException apiException(Throwable error) {
        ApiException found = null;
        for (Throwable t = error; t != null && t.getCause() != t; t = t.getCause()) {
            if (t instanceof ApiException && Errors.forException(t) != Errors.UNKNOWN_SERVER_ERROR) {
                found = (ApiException) t;
            }
        }
        return found;
    }

    /** Whether another holder of the transactional id fenced this producer. */
    static boolean isFenced(Throwable error) {
        for (Throwable t = error; t != null && t.getCause() != t; t = t.getCause()) {
            if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private static String encode(Map<String, Object> payload) {
        try {
            byte[] json = WritePlan.JSON.writeValueAsBytes(payload);
            return Base64.getEncoder().encodeToString(json);
        } catch (JsonProcessingException e) {
            return Base64.getEncoder().encodeToString("{\"kind\":\"unencodable\"}".getBytes(StandardCharsets.UTF_8));
        }
    }
}
