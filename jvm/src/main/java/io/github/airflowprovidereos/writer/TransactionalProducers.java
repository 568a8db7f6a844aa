package io.github.airflowprovidereos.writer;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The executor JVM's transactional producers, one per transactional id and producer config.
 *
 * <p>A producer is created and {@code initTransactions}-ed on first use, which fences every
 * earlier holder of the id and aborts what it left open. It is kept between batches (Spark runs
 * the same input partition's task in any executor, so a kept producer can be stale: the task
 * asks {@link Lease#lastCommittedBatch()} and the coordinator's answer to its first request).
 * A task holds its entry's lock from {@link #acquire} to {@link Lease#release}, so two attempts
 * of one partition in this JVM (speculation) take turns instead of sharing a transaction.
 * Entries idle for {@link #IDLE_MS} are closed by the next acquire: a JVM that outlives a query
 * (local mode in tests, a long-lived executor) does not keep its connections forever. A closed
 * entry is marked so under its lock and leaves the cache before the lock is let go, so a task
 * that waited for it takes its successor (never a closed producer) and an id has one live entry.
 */
public final class TransactionalProducers {
    static final long IDLE_MS = TimeUnit.MINUTES.toMillis(10);
    /** The JVM's cache, which the tasks share. */
    private static final TransactionalProducers SHARED =
            new TransactionalProducers(TransactionalProducers::kafkaProducer, System::currentTimeMillis, IDLE_MS);

    private final Map<String, Entry> cache = new ConcurrentHashMap<>();
    private final Function<Properties, Producer<byte[], byte[]>> factory;
    private final LongSupplier clock;
    private final long idleMs;

    /**
     * A cache of its own (the tests' seam: no broker, their clock).
     *
     * @param factory makes a producer of the settings (the transactional id among them), not yet initialized
     * @param clock the time in milliseconds
     * @param idleMs how long an entry stays unused before the next acquire closes it
     */
    TransactionalProducers(Function<Properties, Producer<byte[], byte[]>> factory, LongSupplier clock, long idleMs) {
        this.factory = factory;
        this.clock = clock;
        this.idleMs = idleMs;
    }

    private static Producer<byte[], byte[]> kafkaProducer(Properties props) {
        // Instances, not class names: no class loading by name across Spark's class loaders.
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** One cached producer and what the tasks learned about it. */
    static final class Entry {
        final String key;
        final String transactionalId;
        final String configFingerprint;
        final Map<String, String> config;
        final ReentrantLock lock = new ReentrantLock();
        Producer<byte[], byte[]> producer;
        Long lastCommittedBatch;
        /** Closed and out of the cache (under {@link #lock}): an acquirer that waited for it looks again. */
        boolean closed;
        volatile long lastUsedMs;

        Entry(String key, String transactionalId, String configFingerprint, Map<String, String> config, long now) {
            this.key = key;
            this.transactionalId = transactionalId;
            this.configFingerprint = configFingerprint;
            this.config = config;
            this.lastUsedMs = now;
        }
    }

    /** A task's hold on one entry; {@link #release} it in the writer's close. */
    public final class Lease {
        private final Entry entry;
        private boolean released;
        /** Whether this lease (its task) created the producer it holds. */
        private boolean created;

        private Lease(Entry entry) {
            this.entry = entry;
        }

        /**
         * The initialized producer, created (fencing every earlier holder of the id) when there is none.
         *
         * @return the producer
         */
        public Producer<byte[], byte[]> producer() {
            if (entry.producer == null) {
                Properties props = new Properties();
                props.putAll(entry.config);
                props.put("transactional.id", entry.transactionalId);
                Producer<byte[], byte[]> made = factory.apply(props);
                try {
                    made.initTransactions();
                } catch (RuntimeException e) {
                    made.close(Duration.ZERO);
                    throw e;
                }
                entry.producer = made;
                created = true;
            }
            return entry.producer;
        }

        /**
         * Whether this task created the producer (fencing every earlier holder): a fence of it then means
         * another writer started after it. One an earlier task created, even one that only skipped and so
         * never committed, may have been fenced by another JVM since; that is no zombie.
         */
        public boolean created() {
            return created;
        }

        /** The batch this producer last committed; {@code null}: none since it was created. */
        public Long lastCommittedBatch() {
            return entry.lastCommittedBatch;
        }

        /** The producer committed {@code batchId}. */
        public void committed(long batchId) {
            entry.lastCommittedBatch = batchId;
        }

        /**
         * Forget the producer: the next use creates one, whose {@code initTransactions} aborts what
         * this one left open. Closed at once, without ending its transaction (a graceful close would
         * abort it, a crash would not: the fault points rely on the latter).
         */
        public void drop() {
            if (entry.producer != null) {
                entry.producer.close(Duration.ZERO);
            }
            entry.producer = null;
            entry.lastCommittedBatch = null;
        }

        /** Let the next task of this id in this JVM have the entry. */
        public void release() {
            if (!released) {
                released = true;
                entry.lastUsedMs = clock.getAsLong();
                entry.lock.unlock();
            }
        }
    }

    /**
     * Hold the entry of {@code transactionalId} with {@code config} until {@link Lease#release}.
     *
     * @param transactionalId the input partition's id
     * @param config the producer's settings (without the id and serializers)
     * @return the lease
     */
    public static Lease acquire(String transactionalId, Map<String, String> config) {
        return SHARED.lease(transactionalId, config);
    }

    /**
     * Close the idle producers of the sink's transactional ids made with {@code config} (the sink's
     * close, in local mode where the executors are the driver's JVM). Another pipeline's, even with
     * the same settings, stay.
     *
     * @param config the producer settings the sink registered
     * @param transactionalIds the ids the sink's writes used
     * @return how many were closed
     */
    public static int closeAll(Map<String, String> config, Collection<String> transactionalIds) {
        return SHARED.closeIdleOf(config, transactionalIds);
    }

    Lease lease(String transactionalId, Map<String, String> config) {
        closeIdle();
        String fingerprint = fingerprint(config);
        String key = transactionalId + "\u0000" + fingerprint;
        while (true) {
            Entry entry = cache.computeIfAbsent(key,
                    k -> new Entry(k, transactionalId, fingerprint, new HashMap<>(config), clock.getAsLong()));
            entry.lock.lock();
            if (!entry.closed) {
                return new Lease(entry);
            }
            // Closed while this thread waited for it, and out of the cache: the next look finds or makes its successor.
            entry.lock.unlock();
        }
    }

    int closeIdleOf(Map<String, String> config, Collection<String> transactionalIds) {
        String fingerprint = fingerprint(config);
        Set<String> ids = new HashSet<>(transactionalIds);
        int closed = 0;
        for (Entry entry : cache.values()) {
            if (entry.configFingerprint.equals(fingerprint) && ids.contains(entry.transactionalId)
                    && entry.lock.tryLock()) {
                try {
                    closed += retire(entry, Duration.ofSeconds(5));
                } finally {
                    entry.lock.unlock();
                }
            }
        }
        return closed;
    }

    private void closeIdle() {
        long now = clock.getAsLong();
        for (Entry entry : cache.values()) {
            if (now - entry.lastUsedMs > idleMs && entry.lock.tryLock()) {
                try {
                    retire(entry, Duration.ofSeconds(1));
                } finally {
                    entry.lock.unlock();
                }
            }
        }
    }

    /**
     * Take an entry out of use, its lock held: marked closed, its producer closed, then out of the cache
     * (only this entry: never a successor under the same key). An acquirer that found it meanwhile waits
     * for the lock, sees it closed and looks again.
     *
     * @return 1 when it had a producer to close
     */
    private int retire(Entry entry, Duration timeout) {
        if (entry.closed) {
            return 0;
        }
        entry.closed = true;
        Producer<byte[], byte[]> producer = entry.producer;
        entry.producer = null;
        entry.lastCommittedBatch = null;
        try {
            if (producer != null) {
                producer.close(timeout);
            }
        } finally {
            cache.remove(entry.key, entry);
        }
        return producer == null ? 0 : 1;
    }

    /** A digest of the settings: the cache keeps no secret in its keys. */
    static String fingerprint(Map<String, String> config) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            for (Map.Entry<String, String> e : new TreeMap<>(config).entrySet()) {
                digest.update(e.getKey().getBytes(StandardCharsets.UTF_8));
                digest.update((byte) 0);
                digest.update(String.valueOf(e.getValue()).getBytes(StandardCharsets.UTF_8));
                digest.update((byte) 1);
            }
            StringBuilder hex = new StringBuilder();
            for (byte b : digest.digest()) {
                hex.append(String.format("%02x", b));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
