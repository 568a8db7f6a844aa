package io.github.airflowprovidereos.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** The executor JVM's producer cache, with mock producers (no broker) and a clock of the test's. */
class TransactionalProducersTest {
    private static final Map<String, String> CONFIG = Map.of("bootstrap.servers", "localhost:9092", "acks", "all");
    private static final String ID = "p-0_0";

    private final List<MockProducer<byte[], byte[]>> made = new CopyOnWriteArrayList<>();
    private final AtomicLong now = new AtomicLong(1_000_000L);
    /** With {@link #slowFirstClose}: the first producer's close counts down, then waits for {@link #finishClose}. */
    private final CountDownLatch closing = new CountDownLatch(1);
    private final CountDownLatch finishClose = new CountDownLatch(1);
    private volatile boolean slowFirstClose;
    private final TransactionalProducers cache = new TransactionalProducers(props -> {
        boolean first = made.isEmpty();
        MockProducer<byte[], byte[]> producer =
                new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer()) {
                    @Override
                    public void close(Duration timeout) {
                        if (first && slowFirstClose) {
                            closing.countDown();
                            await(finishClose);
                        }
                        super.close(timeout);
                    }
                };
        made.add(producer);
        return producer;
    }, now::get, 1_000L);

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitWaiting(Thread thread) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (thread.getState() != Thread.State.WAITING) {
            assertTrue(System.nanoTime() < deadline, thread.getName() + " never waited for the entry's lock");
            Thread.sleep(5);
        }
    }

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

    /** What a task does with its lease; returns the producer and whether the lease created it. */
    private Object[] useLease(String id) {
        TransactionalProducers.Lease lease = cache.lease(id, CONFIG);
        try {
            Producer<byte[], byte[]> producer = lease.producer();
            producer.beginTransaction(); // IllegalStateException on a closed producer
            producer.abortTransaction();
            return new Object[] {producer, lease.created()};
        } finally {
            lease.release();
        }
    }

    @Test
    void acquirersThatWaitedForAnEntryClosedAsIdleTakeOneOpenSuccessor() throws Exception {
        slowFirstClose = true;
        TransactionalProducers.Lease idle = cache.lease(ID, CONFIG);
        MockProducer<byte[], byte[]> old = (MockProducer<byte[], byte[]>) idle.producer();
        idle.release();
        now.addAndGet(2_000L); // past the idle threshold

        // Another partition's acquire closes the idle entry; its producer's close takes a while.
        Thread closer = new Thread(() -> cache.lease("p-0_1", CONFIG).release(), "closer");
        closer.start();
        await(closing);
        // Two tasks of the partition arrive meanwhile and wait for the entry's lock.
        Map<String, Object[]> got = new ConcurrentHashMap<>();
        List<Thread> tasks = new ArrayList<>();
        for (String name : List.of("task-1", "task-2")) {
            Thread task = new Thread(() -> got.put(name, useLease(ID)), name);
            task.start();
            awaitWaiting(task);
            tasks.add(task);
        }
        finishClose.countDown();
        closer.join(10_000);
        for (Thread task : tasks) {
            task.join(10_000);
        }

        assertTrue(old.closed());
        assertEquals(2, got.size(), "a task failed: " + got.keySet());
        Object[] one = got.get("task-1");
        Object[] two = got.get("task-2");
        assertSame(one[0], two[0]); // one live entry for the id: the second task reuses the first one's producer
        assertNotSame(old, one[0]);
        assertEquals(1, (Boolean.TRUE.equals(one[1]) ? 1 : 0) + (Boolean.TRUE.equals(two[1]) ? 1 : 0));
        assertFalse(((MockProducer<byte[], byte[]>) one[0]).closed());
        assertEquals(2, made.size());
    }

    @Test
    void theSinksCloseClosesOnlyTheProducersOfItsOwnTransactionalIds() {
        Object[] ours = useLease("ours-0_0");
        Object[] theirs = useLease("theirs-0_0"); // another pipeline with the same settings in this JVM
        assertEquals(1, cache.closeIdleOf(CONFIG, List.of("ours-0_0", "ours-0_1")));
        assertTrue(((MockProducer<byte[], byte[]>) ours[0]).closed());
        assertFalse(((MockProducer<byte[], byte[]>) theirs[0]).closed());
        Object[] theirsAgain = useLease("theirs-0_0");
        assertSame(theirs[0], theirsAgain[0]);
        assertFalse((Boolean) theirsAgain[1]);
        Object[] oursAgain = useLease("ours-0_0");
        assertNotSame(ours[0], oursAgain[0]);
        assertTrue((Boolean) oursAgain[1]);
    }
}
