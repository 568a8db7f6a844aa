package io.github.airflowprovidereos.writer;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.DisconnectException;
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
 * the partition with no offset). A pending commit ends with its transaction, at the latest when the
 * broker aborts it after its timeout: the read waits for as long as the write plan says (the spec's
 * transaction timeout plus a margin, computed by the Python core), then fails with
 * {@link StillPending}. Public for the real-broker test, which calls it through py4j.
 */
public final class CommittedOffsets {
    private static final Logger LOG = LoggerFactory.getLogger(CommittedOffsets.class);
    private static final long REQUEST_TIMEOUT_MS = 30_000;

    private CommittedOffsets() {
    }

    /** The partition's offsets were still pending when the read's wait ended. */
    public static final class StillPending extends UnstableOffsetCommitException {
        private static final long serialVersionUID = 1L;
        /** How long the read waited. */
        public final long waitedMs;

        StillPending(String groupId, TopicPartition tp, long waitedMs) {
            super("group " + groupId + " " + tp + " still has a pending transactional offset commit after "
                    + waitedMs + " ms");
            this.waitedMs = waitedMs;
        }
    }

    /**
     * The group's committed offset and metadata for {@code tp}; {@code null} when none.
     *
     * @param adminConfig the connection settings (Java client dialect)
     * @param groupId the sink group
     * @param tp the input partition
     * @param stableTimeoutMs how long to wait for a pending commit (the write plan's {@code stable_read_timeout_ms})
     * @return the committed offset, or {@code null}
     * @throws StillPending the partition's offsets were still pending after {@code stableTimeoutMs}
     * @throws Exception the client's error once retries ran out (the caller names it)
     */
    public static OffsetAndMetadata read(Map<String, String> adminConfig, String groupId, TopicPartition tp,
                                         long stableTimeoutMs) throws Exception {
        try (SharedAdmins.Lease lease = SharedAdmins.SHARED.lease(adminConfig)) {
            return read(lease.admin(), groupId, tp, stableTimeoutMs);
        }
    }

    private static OffsetAndMetadata read(Admin admin, String groupId, TopicPartition tp, long stableTimeoutMs)
            throws Exception {
        ListConsumerGroupOffsetsSpec spec = new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp));
        ListConsumerGroupOffsetsOptions options = new ListConsumerGroupOffsetsOptions().requireStable(true);
        long started = System.currentTimeMillis();
        long deadline = started + Math.max(REQUEST_TIMEOUT_MS, stableTimeoutMs);
        long backoff = 50;
        while (true) {
            boolean pending = false;
            try {
                Map<TopicPartition, OffsetAndMetadata> found = admin
                        .listConsumerGroupOffsets(Map.of(groupId, spec), options)
                        .partitionsToOffsetAndMetadata(groupId)
                        .get(REQUEST_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (found.containsKey(tp)) {
                    OffsetAndMetadata committed = found.get(tp);
                    return committed == null || committed.offset() < 0 ? null : committed;
                }
                pending = true;
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                pending = cause instanceof UnstableOffsetCommitException;
                if (!(cause instanceof RetriableException) || !pending && System.currentTimeMillis() > deadline) {
                    throw cause instanceof Exception ? (Exception) cause : e;
                }
            } catch (TimeoutException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
            }
            if (pending) {
                long now = System.currentTimeMillis();
                if (now > deadline) {
                    throw new StillPending(groupId, tp, now - started);
                }
                LOG.warn("EOS-JVM-WRITER waiting for offsets to be stable: group {} {} has a pending transactional "
                        + "commit", groupId, tp);
            }
            Thread.sleep(backoff);
            backoff = Math.min(1_000, backoff * 2);
        }
    }

    /**
     * Whether the read ended because no broker answered: the caller's wait on the request ran out, the
     * client's own request or call timed out, or it lost its connection. The broker may answer by the
     * next attempt; any other failure is the broker's answer (a refusal, an unknown group...).
     *
     * @param error what {@link #read} threw
     * @return whether it is a failure to get an answer
     */
    public static boolean noAnswer(Throwable error) {
        for (Throwable t = error; t != null && t.getCause() != t; t = t.getCause()) {
            if (t instanceof TimeoutException || t instanceof org.apache.kafka.common.errors.TimeoutException
                    || t instanceof DisconnectException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Close this JVM's unused admin clients of {@code adminConfig} (the sink's close, in local mode; the
     * real-broker tests' own clients).
     *
     * @param adminConfig the admin settings the sink registered
     * @return how many were closed
     */
    public static int closeIdle(Map<String, String> adminConfig) {
        return SharedAdmins.SHARED.closeIdle(adminConfig);
    }

    /** How many admin clients this JVM keeps open (the real-broker test's). */
    public static int openAdmins() {
        return SharedAdmins.SHARED.size();
    }
}
