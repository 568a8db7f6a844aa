package io.github.airflowprovidereos.writer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.junit.jupiter.api.Test;

/** Which failures of the group's offset read are "no broker answered" (the real broker's test pauses one). */
class CommittedOffsetsNoAnswerTest {
    @Test
    void aWaitThatRanOutOrALostConnectionIsNoAnswer() {
        assertTrue(CommittedOffsets.noAnswer(new TimeoutException()));
        assertTrue(CommittedOffsets.noAnswer(new org.apache.kafka.common.errors.TimeoutException("call timed out")));
        assertTrue(CommittedOffsets.noAnswer(new ExecutionException(new DisconnectException("gone"))));
    }

    @Test
    void aBrokersRefusalOrThePendingCommitIsAnAnswer() {
        assertFalse(CommittedOffsets.noAnswer(new GroupAuthorizationException("not allowed")));
        assertFalse(CommittedOffsets.noAnswer(new IllegalStateException("unexpected")));
    }
}
