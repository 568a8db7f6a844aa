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
 * The data source the driver writer spills a micro-batch's output with ({@code executor_writer: jvm}):
 * {@code output.write.format("eos-spill").mode("append").option("eos.spill", ...).save()}.
 *
 * <p>Each task writes its partition's rows as one Arrow IPC stream file in the executor JVM, so
 * the spill starts no Python worker (airflow_provider_eos/spark/jvm_spill.py; docs/design-notes.md
 * note 43). Write only, any schema.
 */
public final class SpillSource implements TableProvider, DataSourceRegister {
    /** The format name (also the class name works). */
    public static final String SHORT_NAME = "eos-spill";

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
        return new SpillTable();
    }

    /** The table: accepts any columns, writes batches. */
    static final class SpillTable implements SupportsWrite {
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
            return new SpillWrite(info);
        }
    }
}
