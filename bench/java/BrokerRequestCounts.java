import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Prints one of the broker's per-request-type figures since it started, one {@code <request type> TAB <value>}
 * line per type (all versions summed), read over JMX from {@code 127.0.0.1:<port>}. The bench diffs two prints.
 *
 * <p>{@code BrokerRequestCounts <port>}: the requests served, Kafka's
 * {@code kafka.network:type=RequestMetrics,name=RequestsPerSec} meters. {@code BrokerRequestCounts <port>
 * RemoteTimeMs}: the milliseconds requests were held waiting (a fetch for records, a produce for its
 * replicas), the {@code RemoteTimeMs} histograms' count times mean, which is their exact sum.
 * {@code BrokerRequestCounts <port> CompilationMs}: one {@code compilation TAB <ms>} line, the milliseconds the
 * broker's JVM has spent compiling (its JIT's {@code TotalCompilationTime}).
 */
public final class BrokerRequestCounts {
    private BrokerRequestCounts() {
    }

    public static void main(String[] args) throws Exception {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        if (args.length > 1 && args[1].equals("CompilationMs")) {
            try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
                CompilationMXBean jit = ManagementFactory.newPlatformMXBeanProxy(connector.getMBeanServerConnection(),
                        ManagementFactory.COMPILATION_MXBEAN_NAME, CompilationMXBean.class);
                System.out.println("compilation\t" + jit.getTotalCompilationTime());
            }
            return;
        }
        boolean held = args.length > 1 && args[1].equals("RemoteTimeMs");
        String metric = held ? "RemoteTimeMs" : "RequestsPerSec";
        try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            Map<String, Double> values = new TreeMap<>();
            ObjectName pattern = new ObjectName("kafka.network:type=RequestMetrics,name=" + metric + ",*");
            for (ObjectName name : server.queryNames(pattern, null)) {
                double count = ((Number) server.getAttribute(name, "Count")).doubleValue();
                double value = held ? count * ((Number) server.getAttribute(name, "Mean")).doubleValue() : count;
                values.merge(name.getKeyProperty("request"), value, Double::sum);
            }
            // Counts print as whole numbers, held milliseconds with their fraction.
            values.forEach((type, value) -> System.out.println(type + "\t" + (held ? value : Long.toString(value.longValue()))));
        }
    }
}
