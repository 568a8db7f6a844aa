import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A transactional producer of the Java client the broker ships, driven line by line from stdin, for
 * tests of the transactions-v2 protocol: the Kafka clients the product writes with (librdkafka,
 * Spark's kafka-clients 3.9) do not negotiate v2, a Java client of 4.0 or later does.
 *
 * <p>Run as a single-file program: {@code java -cp '<kafka jars>/*' TransactionsV2Client.java BOOTSTRAP TXN_ID TOPIC}.
 * Commands: {@code commit} and {@code abort} (one transaction each), {@code aborts N}, {@code open} (begin
 * and write, leave it open), {@code end} (commit the open one), {@code exit}. Each answers one line: {@code ok}, {@code fenced} or {@code error ...}.
 */
public final class TransactionsV2Client {
    public static void main(String[] args) throws Exception {
        Properties settings = new Properties();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        settings.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[1]);
        settings.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        settings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        settings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        String topic = args[2];
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings)) {
            producer.initTransactions();
            System.out.println("ok");
            System.out.flush();
            String line;
            while ((line = commands.readLine()) != null && !line.equals("exit")) {
                System.out.println(run(producer, topic, line.trim().split(" ")));
                System.out.flush();
            }
        }
    }

    private static String run(KafkaProducer<byte[], byte[]> producer, String topic, String[] command) {
        try {
            switch (command[0]) {
                case "commit" -> {
                    write(producer, topic);
                    producer.commitTransaction();
                }
                case "abort" -> {
                    write(producer, topic);
                    producer.abortTransaction();
                }
                case "aborts" -> {
                    for (int i = 0; i < Integer.parseInt(command[1]); i++) {
                        write(producer, topic);
                        producer.abortTransaction();
                    }
                }
                case "empty-aborts" -> {
                    for (int i = 0; i < Integer.parseInt(command[1]); i++) {
                        producer.beginTransaction();
                        producer.abortTransaction();
                    }
                }
                case "open" -> {
                    write(producer, topic);
                    producer.flush();
                }
                case "end" -> producer.commitTransaction();
                default -> {
                    return "error unknown command " + command[0];
                }
            }
            return "ok";
        } catch (ProducerFencedException e) {
            return "fenced";
        } catch (RuntimeException e) {
            return "error " + e;
        }
    }

    private static void write(KafkaProducer<byte[], byte[]> producer, String topic) {
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, "x".getBytes(StandardCharsets.UTF_8)));
    }
}
