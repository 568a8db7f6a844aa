package io.github.airflowprovidereos.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** The executor JVM's producer cache, with mock producers (no broker) and a clock of the test's. */
class TransactionalProducersTest {
    private static final Map<String, String> CONFIG = Map.of("bootstrap.servers", "localhost:9092", "acks", "all");
    private static final String ID = "p-0_0";

    private final List<MockProducer<byte[], byte[]>> made = new CopyOnWriteArrayList<>();
    private final AtomicLong now = new AtomicLong(1_000_000L);
    private final TransactionalProducers cache = new TransactionalProducers(props -> {
        MockProducer<byte[], byte[]> producer =
                new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
        made.add(producer);
        return producer;
    }, now::get, 1_000L);

    @Test
    void aProducerCountsAsCreatedOnlyByTheTaskThatCreatedIt() {
        // A task creates the producer and skips (never commits): the next task gets it as an earlier task's.
        TransactionalProducers.Lease skipping = cache.lease(ID, CONFIG);
        MockProducer<byte[], byte[]> first = (MockProducer<byte[], byte[]>) skipping.producer();
        assertTrue(skipping.created());
        assertTrue(first.transactionInitialized());
        skipping.release();

        TransactionalProducers.Lease next = cache.lease(ID, CONFIG);
        assertFalse(next.created()); // so a fence of it is another JVM's doing: the task replaces it
        assertSame(first, next.producer());
        assertFalse(next.created());
        assertNull(next.lastCommittedBatch());
        next.drop(); // what the task does with a fenced cached producer
        assertTrue(first.closed());
        assertNotSame(first, next.producer());
        assertTrue(next.created()); // its replacement is this task's own: a fence of that one is a zombie
        next.committed(2);
        next.release();

        TransactionalProducers.Lease after = cache.lease(ID, CONFIG);
        assertSame(made.get(1), after.producer());
        assertFalse(after.created());
        assertEquals(2L, after.lastCommittedBatch());
        after.release();
        assertEquals(2, made.size());
    }
}
