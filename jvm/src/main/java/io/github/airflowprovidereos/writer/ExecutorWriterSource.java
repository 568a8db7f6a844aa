package io.github.airflowprovidereos.writer;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The data source the exactly-once sink writes a micro-batch to with {@code executor_writer: jvm}:
 * {@code batch.write.format("eos-executor-writer").mode("append").option("eos.plan", ...).save()}.
 *
 * <p>Write only, any schema (the output frame's columns are checked by {@link RowRecords}).
 */
public final class ExecutorWriterSource implements TableProvider, DataSourceRegister {
    /** The format name (also the class name works). */
    public static final String SHORT_NAME = "eos-executor-writer";

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return new StructType();
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new WriterTable();
    }

    /** The table: accepts any columns, writes batches. */
    static final class WriterTable implements SupportsWrite {
        @Override
        public String name() {
            return SHORT_NAME;
        }

        @Override
        public StructType schema() {
            return new StructType();
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return new ExecutorBatchWrite(info);
        }
    }
}
