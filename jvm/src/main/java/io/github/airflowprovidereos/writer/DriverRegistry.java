package io.github.airflowprovidereos.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The driver JVM's side of the Python sink (called through py4j): client settings in, task stats out.
 *
 * <p>Settings are registered under a random handle and looked up by the batch write on the driver,
 * so the write's options carry the handle only, never a secret. Stats are kept under the batch's
 * report key (query id, batch id and a nonce of the call), so concurrent queries in one driver
 * never read each other's; the Python driver takes them once the write returned or failed.
 */
public final class DriverRegistry {
    private static final Map<String, Map<String, String>[]> CONFIGS = new ConcurrentHashMap<>();
    private static final Map<String, List<String>> REPORTS = new ConcurrentHashMap<>();
    private static final TypeReference<HashMap<String, String>> SETTINGS = new TypeReference<>() {
    };
    private static final TypeReference<List<String>> IDS = new TypeReference<>() {
    };

    private DriverRegistry() {
    }

    /**
     * Register the sink's client settings (Java client dialect, as JSON objects of strings).
     *
     * @param handle a random id the sink passes in each write's options
     * @param producerJson the producers' settings, without the transactional id
     * @param adminJson the admin client's settings
     */
    @SuppressWarnings("unchecked")
    public static void putConfig(String handle, String producerJson, String adminJson) {
        try {
            CONFIGS.put(handle, new Map[] {WritePlan.JSON.readValue(producerJson, SETTINGS),
                WritePlan.JSON.readValue(adminJson, SETTINGS)});
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException("the sink's client settings are not a JSON object of strings", e);
        }
    }

    /**
     * Forget the settings and close this JVM's idle producers of the sink's transactional ids made with
     * them, and its unused admin clients of the settings (local mode: the executors are here); another
     * pipeline's producers stay (an admin is made again by the next read that needs it).
     *
     * @param handle the sink's handle
     * @param transactionalIdsJson the transactional ids the sink's writes used, as a JSON array of strings
     * @return how many producers were closed
     */
    public static int forgetConfig(String handle, String transactionalIdsJson) {
        Map<String, String>[] found = CONFIGS.remove(handle);
        if (found == null) {
            return 0;
        }
        CommittedOffsets.closeIdle(found[1]);
        try {
            return TransactionalProducers.closeAll(found[0], WritePlan.JSON.readValue(transactionalIdsJson, IDS));
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException("the sink's transactional ids are not a JSON array of strings", e);
        }
    }

    /** Whether this JVM can load the writer (the Python side's check that the jar is on the classpath). */
    public static String version() {
        return "1";
    }

    static Map<String, String>[] config(String handle) {
        Map<String, String>[] found = CONFIGS.get(handle);
        if (found == null) {
            throw new IllegalStateException("no client settings registered under the write's handle in this driver");
        }
        return found;
    }

    static void putReports(String key, List<String> reports) {
        REPORTS.put(key, reports);
    }

    /**
     * The tasks' stats of a write, as a JSON array of the {@code EOS-TASK} objects, removed.
     *
     * @param key the write's report key
     * @return the array, or {@code null} when the write stored none (it failed before its commit)
     */
    public static String takeReports(String key) {
        List<String> found = REPORTS.remove(key);
        return found == null ? null : "[" + String.join(",", found) + "]";
    }
}
