import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Prints the broker's request counts since it started, one {@code <request type> TAB <count>} line
 * per type (all versions summed), read over JMX from {@code 127.0.0.1:<port>}: Kafka's
 * {@code kafka.network:type=RequestMetrics,name=RequestsPerSec} meters. The bench diffs two prints.
 */
public final class BrokerRequestCounts {
    private BrokerRequestCounts() {
    }

    public static void main(String[] args) throws Exception {
        JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        try (JMXConnector connector = JMXConnectorFactory.connect(url)) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            Map<String, Long> counts = new TreeMap<>();
            ObjectName pattern = new ObjectName("kafka.network:type=RequestMetrics,name=RequestsPerSec,*");
            for (ObjectName name : server.queryNames(pattern, null)) {
                long count = ((Number) server.getAttribute(name, "Count")).longValue();
                counts.merge(name.getKeyProperty("request"), count, Long::sum);
            }
            counts.forEach((type, count) -> System.out.println(type + "\t" + count));
        }
    }
}
