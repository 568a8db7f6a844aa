package io.github.airflowprovidereos.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Test;

/** The executor JVM's admin clients: closed once unused and idle, never under a task that uses one. */
class SharedAdminsTest {
    private static final Map<String, String> ONE = Map.of("bootstrap.servers", "localhost:9092");
    private static final Map<String, String> OTHER = Map.of("bootstrap.servers", "localhost:9093");

    private final List<Admin> made = new CopyOnWriteArrayList<>();
    private final Set<Admin> closed = ConcurrentHashMap.newKeySet();
    private final AtomicLong now = new AtomicLong(1_000_000L);
    private final SharedAdmins admins = new SharedAdmins(props -> fakeAdmin(), now::get, 1_000L);

    /** An Admin that only records its close and refuses any use after it (as a closed client does). */
    private Admin fakeAdmin() {
        AtomicReference<Admin> self = new AtomicReference<>();
        Admin admin = (Admin) Proxy.newProxyInstance(Admin.class.getClassLoader(), new Class<?>[] {Admin.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("close")) {
                        closed.add(self.get());
                        return null;
                    }
                    if (method.getName().equals("hashCode")) {
                        return System.identityHashCode(proxy);
                    }
                    if (method.getName().equals("equals")) {
                        return proxy == args[0];
                    }
                    if (closed.contains(self.get())) {
                        throw new IllegalStateException("used after close");
                    }
                    return null;
                });
        self.set(admin);
        made.add(admin);
        return admin;
    }

    @Test
    void leasesOfOneConfigShareOneAdminAndLeasesOfAnotherGetTheirOwn() {
        try (SharedAdmins.Lease a = admins.lease(ONE); SharedAdmins.Lease b = admins.lease(Map.copyOf(ONE));
             SharedAdmins.Lease c = admins.lease(OTHER)) {
            assertSame(a.admin(), b.admin());
            assertNotSame(a.admin(), c.admin());
        }
        assertEquals(2, made.size());
        assertTrue(closed.isEmpty(), "released but not idle yet: kept for the next batch's reads");
        try (SharedAdmins.Lease again = admins.lease(ONE)) {
            assertSame(made.get(0), again.admin());
        }
    }

    @Test
    void anAdminIdlePastTheThresholdIsClosedByTheNextLeaseAndMadeAgainWhenNeeded() {
        Admin old;
        try (SharedAdmins.Lease lease = admins.lease(ONE)) {
            old = lease.admin();
        }
        now.addAndGet(2_000L);
        try (SharedAdmins.Lease other = admins.lease(OTHER)) {
            assertTrue(closed.contains(old), "the idle admin of another config was closed");
            assertFalse(closed.contains(other.admin()));
        }
        assertEquals(1, admins.size());
        try (SharedAdmins.Lease fresh = admins.lease(ONE)) {
            assertNotSame(old, fresh.admin());
            assertFalse(closed.contains(fresh.admin()));
        }
    }

    @Test
    void anAdminInUseIsNeverClosedHoweverLongItsLeaseLasts() throws Exception {
        CountDownLatch leased = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicReference<Admin> used = new AtomicReference<>();
        // A task's long read (a pending commit waited for) on another thread.
        Thread task = new Thread(() -> {
            try (SharedAdmins.Lease lease = admins.lease(ONE)) {
                used.set(lease.admin());
                leased.countDown();
                assertTrue(done.await(10, TimeUnit.SECONDS));
                lease.admin().describeCluster(); // throws if it was closed meanwhile
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "reading-task");
        task.start();
        assertTrue(leased.await(10, TimeUnit.SECONDS));
        now.addAndGet(60_000L); // far past the idle threshold while the task still reads
        admins.lease(OTHER).close(); // another task's lease closes the idle admins: not the one in use
        assertEquals(0, admins.closeIdle(ONE), "the sink's close closes no admin in use");
        assertFalse(closed.contains(used.get()));
        done.countDown();
        task.join(10_000);
        assertEquals(null, failure.get());
        // Released, it is idle from its release on: closed once that lasted, by the sink's close at once.
        assertEquals(1, admins.closeIdle(ONE));
        assertTrue(closed.contains(used.get()));
        assertEquals(1, admins.size(), "the other config's admin stays");
    }

    @Test
    void aLeaseReleasedTwiceCountsOnce() {
        SharedAdmins.Lease first = admins.lease(ONE);
        SharedAdmins.Lease second = admins.lease(ONE);
        first.close();
        first.close();
        assertEquals(0, admins.closeIdle(ONE), "the second lease still uses it");
        second.close();
        assertEquals(1, admins.closeIdle(ONE));
    }
}
