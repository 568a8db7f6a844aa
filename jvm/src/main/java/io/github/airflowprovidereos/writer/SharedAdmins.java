package io.github.airflowprovidereos.writer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;

/**
 * The executor JVM's Kafka {@code Admin} clients, one per connection config, shared by the tasks'
 * reads of the sink group's offsets ({@link CommittedOffsets}).
 *
 * <p>Lifetimes follow {@link TransactionalProducers}: an admin unused for {@link #IDLE_MS} is
 * closed by the next lease (of any config), and the sink's close in local mode closes the idle
 * admins of its settings ({@link #closeIdle(Map)}). Each lease counts as a user until released,
 * and only an admin without users is ever closed, so a task's read never loses its client; it
 * leaves the cache (under the cache's lock) before it is closed, so the next lease makes a new one.
 */
final class SharedAdmins {
    static final long IDLE_MS = TransactionalProducers.IDLE_MS;
    /** What an idle admin's close waits for: it has no request in flight. */
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);
    /** The JVM's admins, which the tasks share. */
    static final SharedAdmins SHARED = new SharedAdmins(Admin::create, System::currentTimeMillis, IDLE_MS);

    /** Guarded by {@code this}. */
    private final Map<String, Entry> entries = new HashMap<>();
    private final Function<Properties, Admin> factory;
    private final LongSupplier clock;
    private final long idleMs;

    /**
     * A cache of its own (the tests' seam: no broker, their clock).
     *
     * @param factory makes an admin of the settings
     * @param clock the time in milliseconds
     * @param idleMs how long an admin stays unused before the next lease closes it
     */
    SharedAdmins(Function<Properties, Admin> factory, LongSupplier clock, long idleMs) {
        this.factory = factory;
        this.clock = clock;
        this.idleMs = idleMs;
    }

    /** One admin and how many leases use it (both guarded by the cache's lock). */
    private static final class Entry {
        final String fingerprint;
        final Admin admin;
        int users;
        long lastUsedMs;

        Entry(String fingerprint, Admin admin, long now) {
            this.fingerprint = fingerprint;
            this.admin = admin;
            this.lastUsedMs = now;
        }
    }

    /** A task's use of one admin; release it ({@link #close}) when the read is done. */
    final class Lease implements AutoCloseable {
        private final Entry entry;
        private boolean released;

        private Lease(Entry entry) {
            this.entry = entry;
        }

        /** The admin, open until this lease is released. */
        Admin admin() {
            return entry.admin;
        }

        @Override
        public void close() {
            synchronized (SharedAdmins.this) {
                if (!released) {
                    released = true;
                    entry.users--;
                    entry.lastUsedMs = clock.getAsLong();
                }
            }
        }
    }

    /**
     * Use the admin of {@code config} (made when there is none) until the lease is closed; first close the
     * admins idle for longer than the threshold.
     *
     * @param config the connection settings (Java client dialect)
     * @return the lease
     */
    Lease lease(Map<String, String> config) {
        String fingerprint = TransactionalProducers.fingerprint(config);
        List<Admin> idle;
        Lease lease;
        synchronized (this) {
            long now = clock.getAsLong();
            idle = take(e -> e.users == 0 && now - e.lastUsedMs > idleMs);
            Entry entry = entries.get(fingerprint);
            if (entry == null) {
                // Under the lock: Admin.create starts the client's thread and sends nothing, so the wait is short.
                Properties props = new Properties();
                props.putAll(config);
                entry = new Entry(fingerprint, factory.apply(props), now);
                entries.put(fingerprint, entry);
            }
            entry.users++;
            lease = new Lease(entry);
        }
        closeAll(idle);
        return lease;
    }

    /**
     * Close the unused admins of {@code config} (the sink's close in local mode); one in use stays.
     *
     * @param config the admin settings the sink registered
     * @return how many were closed
     */
    int closeIdle(Map<String, String> config) {
        String fingerprint = TransactionalProducers.fingerprint(config);
        List<Admin> idle;
        synchronized (this) {
            idle = take(e -> e.users == 0 && e.fingerprint.equals(fingerprint));
        }
        closeAll(idle);
        return idle.size();
    }

    /** How many admins are open (the tests'). */
    synchronized int size() {
        return entries.size();
    }

    /** Out of the cache, under its lock: the admins of the entries {@code which} picks (to close outside it). */
    private List<Admin> take(Predicate<Entry> which) {
        List<Admin> taken = new ArrayList<>();
        for (Iterator<Entry> it = entries.values().iterator(); it.hasNext();) {
            Entry entry = it.next();
            if (which.test(entry)) {
                it.remove();
                taken.add(entry.admin);
            }
        }
        return taken;
    }

    private static void closeAll(List<Admin> admins) {
        for (Admin admin : admins) {
            try {
                admin.close(CLOSE_TIMEOUT);
            } catch (RuntimeException ignored) {
                // Out of the cache already: a failed close leaves nothing a task could pick up.
            }
        }
    }
}
