package io.github.airflowprovidereos.writer;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The output frame's rows as Kafka records: the columns contract of the Python writers
 * ({@code airflow_provider_eos/spark/record_producer.py}, {@code output_frame}).
 *
 * <p>{@code key} and {@code value} (binary or string, as Spark's Kafka writer takes them), optional
 * {@code headers} ({@code array<struct<key: string, value: binary>>}), optional {@code dlq_reason}
 * (not null: the row is a dead letter, sent to the spec's DLQ topic with {@code eos.dlq.reason} and
 * {@code eos.source.*} headers from the source columns {@code topic}, {@code partition} and
 * {@code offset} the transform kept). A row without headers (null or empty) costs one null check.
 * Other columns are not read: the executor writers hand the transform's batch over as it is (a
 * projection would be one more plan per batch on the driver), so the types are checked here, on
 * the driver, before any task starts.
 */
final class RowRecords implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final String[] ORIGIN_COLUMNS = {"topic", "partition", "offset"};

    private final int key;
    private final boolean keyIsText;
    private final int value;
    private final boolean valueIsText;
    private final int headers;
    private final int reason;
    private final DataType reasonType;
    private final int topicColumn;
    private final int partitionColumn;
    private final int[] origin;
    private final DataType[] originTypes;
    private final String[] originNames;

    RowRecords(StructType schema) {
        List<String> names = List.of(schema.fieldNames());
        key = names.indexOf("key");
        value = names.indexOf("value");
        if (value < 0) {
            throw new IllegalArgumentException("the output frame has no value column: " + names);
        }
        keyIsText = key >= 0 && isText(schema.fields()[key]);
        valueIsText = isText(schema.fields()[value]);
        headers = names.indexOf("headers");
        if (headers >= 0) {
            requireHeaders(schema.fields()[headers]);
        }
        reason = names.indexOf("dlq_reason");
        reasonType = reason < 0 ? null : schema.fields()[reason].dataType();
        topicColumn = names.indexOf("topic");
        partitionColumn = names.indexOf("partition");
        List<Integer> found = new ArrayList<>();
        List<String> foundNames = new ArrayList<>();
        for (String column : ORIGIN_COLUMNS) {
            if (names.contains(column)) {
                found.add(names.indexOf(column));
                foundNames.add(column);
            }
        }
        origin = found.stream().mapToInt(Integer::intValue).toArray();
        originNames = foundNames.toArray(new String[0]);
        originTypes = new DataType[origin.length];
        for (int i = 0; i < origin.length; i++) {
            originTypes[i] = schema.fields()[origin[i]].dataType();
        }
    }

    /** Whether a key or value column is text (UTF-8 bytes on the wire); refused unless string or binary. */
    private static boolean isText(StructField field) {
        DataType type = field.dataType();
        if (!type.equals(DataTypes.StringType) && !type.equals(DataTypes.BinaryType)) {
            throw TaskFailure.of("output_columns", "column", field.name(), "type", type.simpleString(),
                    "expected", "string or binary");
        }
        return type.equals(DataTypes.StringType);
    }

    private static void requireHeaders(StructField field) {
        DataType type = field.dataType();
        if (type instanceof ArrayType array && array.elementType() instanceof StructType header
                && header.fields().length == 2 && header.fields()[0].dataType().equals(DataTypes.StringType)
                && header.fields()[1].dataType().equals(DataTypes.BinaryType)) {
            return;
        }
        throw TaskFailure.of("output_columns", "column", field.name(), "type", type.simpleString(),
                "expected", "array<struct<key:string,value:binary>>");
    }

    /** Whether the row is a dead letter. */
    boolean isDeadLetter(InternalRow row) {
        return reason >= 0 && !row.isNullAt(reason);
    }

    /**
     * The source column that names another input partition than the task's, or {@code null}.
     * Where the transform kept the source columns, every row must come from the task's partition.
     */
    String foreignSource(InternalRow row, UTF8String topic, int partition) {
        if (topicColumn >= 0 && (row.isNullAt(topicColumn) || !topic.equals(row.getUTF8String(topicColumn)))) {
            return "topic";
        }
        if (partitionColumn >= 0 && (row.isNullAt(partitionColumn) || row.getInt(partitionColumn) != partition)) {
            return "partition";
        }
        return null;
    }

    /** The value of source column {@code column} of the row, as the error names it. */
    Object sourceValue(InternalRow row, String column) {
        int ordinal = column.equals("topic") ? topicColumn : partitionColumn;
        if (row.isNullAt(ordinal)) {
            return null;
        }
        return column.equals("topic") ? (Object) row.getUTF8String(ordinal).toString() : (Object) row.getInt(ordinal);
    }

    /**
     * The record of an output row, or of a dead letter for {@code dlqTopic}.
     *
     * @param row the row
     * @param outputTopic the spec's output topic
     * @param dlqTopic the spec's dead-letter topic (only asked for when the row is a dead letter)
     * @param deadLetter whether {@link #isDeadLetter} said so
     * @throws TaskFailure {@code null_header} for a null header or a header whose key is null
     */
    ProducerRecord<byte[], byte[]> record(InternalRow row, String outputTopic, String dlqTopic, boolean deadLetter) {
        byte[] k = key >= 0 && !row.isNullAt(key) ? bytes(row, key, keyIsText) : null;
        byte[] v = row.isNullAt(value) ? null : bytes(row, value, valueIsText);
        List<Header> recordHeaders = null;
        if (headers >= 0 && !row.isNullAt(headers)) {
            ArrayData array = row.getArray(headers);
            int n = array.numElements();
            if (n > 0) {
                recordHeaders = new ArrayList<>(n + (deadLetter ? 1 + origin.length : 0));
                for (int i = 0; i < n; i++) {
                    if (array.isNullAt(i)) {
                        throw TaskFailure.of("null_header", "what", "header");
                    }
                    InternalRow header = array.getStruct(i, 2);
                    if (header.isNullAt(0)) { // the column's type allows it, Kafka's headers do not
                        throw TaskFailure.of("null_header", "what", "key");
                    }
                    recordHeaders.add(new RecordHeader(header.getUTF8String(0).toString(),
                            header.isNullAt(1) ? null : header.getBinary(1)));
                }
            }
        }
        if (!deadLetter) {
            return new ProducerRecord<>(outputTopic, null, null, k, v, recordHeaders);
        }
        if (recordHeaders == null) {
            recordHeaders = new ArrayList<>(1 + origin.length);
        }
        recordHeaders.add(new RecordHeader("eos.dlq.reason", text(row, reason, reasonType)));
        for (int i = 0; i < origin.length; i++) {
            recordHeaders.add(new RecordHeader("eos.source." + originNames[i], text(row, origin[i], originTypes[i])));
        }
        return new ProducerRecord<>(dlqTopic, null, null, k, v, recordHeaders);
    }

    private static byte[] bytes(InternalRow row, int ordinal, boolean text) {
        return text ? row.getUTF8String(ordinal).getBytes() : row.getBinary(ordinal);
    }

    /** Python's {@code str(value).encode()} of a column value: its text, "None" for null. */
    private static byte[] text(InternalRow row, int ordinal, DataType type) {
        Object found = row.isNullAt(ordinal) ? null : row.get(ordinal, type);
        return (found == null ? "None" : found.toString()).getBytes(StandardCharsets.UTF_8);
    }
}
