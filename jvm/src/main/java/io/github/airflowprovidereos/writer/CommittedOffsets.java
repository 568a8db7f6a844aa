package io.github.airflowprovidereos.writer;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnstableOffsetCommitException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink group's committed offset of one partition, read stable (as the Python writer's
 * {@code read_committed_offsets}): the coordinator resolves a pending transactional offset
 * commit first, so a commit in flight is never taken for the previous batch's state.
 *
 * <p>The coordinator answers a partition with a pending commit with {@code UNSTABLE_OFFSET_COMMIT}
 * on that partition, and the Java {@code Admin} (kafka-clients 3.9) drops a partition that carries
 * an error from its result instead of failing: a partition asked for and missing from the answer is
 * unstable, and read again, never taken for "nothing committed" (which the group's answer gives as
 * the partition with no offset). Public for the real-broker test, which calls it through py4j.
 */
public final class CommittedOffsets {
    private static final Logger LOG = LoggerFactory.getLogger(CommittedOffsets.class);
    /** One admin client per connection config in this JVM: the tasks share it. */
    private static final Map<String, Admin> ADMINS = new ConcurrentHashMap<>();
    private static final long REQUEST_TIMEOUT_MS = 30_000;
    private static final long STABLE_TIMEOUT_MS = 60_000;

    private CommittedOffsets() {
    }

    /**
     * The group's committed offset and metadata for {@code tp}; {@code null} when none.
     *
     * @param adminConfig the connection settings (Java client dialect)
     * @param groupId the sink group
     * @param tp the input partition
     * @return the committed offset, or {@code null}
     * @throws Exception the client's error once retries ran out (the caller names it)
     */
    public static OffsetAndMetadata read(Map<String, String> adminConfig, String groupId, TopicPartition tp)
            throws Exception {
        Admin admin = ADMINS.computeIfAbsent(TransactionalProducers.fingerprint(adminConfig), k -> {
            Properties props = new Properties();
            props.putAll(adminConfig);
            return Admin.create(props);
        });
        ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp));
        ListConsumerGroupOffsetsOptions options = new ListConsumerGroupOffsetsOptions().requireStable(true);
        long deadline = System.currentTimeMillis() + Math.max(REQUEST_TIMEOUT_MS, STABLE_TIMEOUT_MS);
        long backoff = 50;
        while (true) {
            try {
                Map<TopicPartition, OffsetAndMetadata> found = admin
                        .listConsumerGroupOffsets(Map.of(groupId, spec), options)
                        .partitionsToOffsetAndMetadata(groupId)
                        .get(REQUEST_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (found.containsKey(tp)) {
                    OffsetAndMetadata committed = found.get(tp);
                    return committed == null || committed.offset() < 0 ? null : committed;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new UnstableOffsetCommitException("group " + groupId + " " + tp + " still has a pending "
                            + "transactional offset commit after " + STABLE_TIMEOUT_MS + " ms");
                }
                unstable(groupId, tp);
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (!(cause instanceof RetriableException) || System.currentTimeMillis() > deadline) {
                    throw cause instanceof Exception ? (Exception) cause : e;
                }
                if (cause instanceof UnstableOffsetCommitException) {
                    unstable(groupId, tp);
                }
            } catch (TimeoutException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            Thread.sleep(backoff);
            backoff = Math.min(1_000, backoff * 2);
        }
    }

    /** The phrase the tests look for: the read met a pending transactional commit and waits for it. */
    private static void unstable(String groupId, TopicPartition tp) {
        LOG.warn("EOS-JVM-WRITER waiting for offsets to be stable: group {} {} has a pending transactional commit",
                groupId, tp);
    }
}
