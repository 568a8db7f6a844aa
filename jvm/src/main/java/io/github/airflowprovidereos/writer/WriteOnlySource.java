package io.github.airflowprovidereos.writer;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
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
 * A data source of this jar: write only, batch writes of any columns (each write checks the ones it reads).
 * Spark creates a source by its no-argument constructor; a subclass names itself and its write.
 */
abstract class WriteOnlySource implements TableProvider, DataSourceRegister {
    private final String name;
    private final Function<LogicalWriteInfo, WriteBuilder> write;

    WriteOnlySource(String name, Function<LogicalWriteInfo, WriteBuilder> write) {
        this.name = name;
        this.write = write;
    }

    @Override
    public final String shortName() {
        return name;
    }

    @Override
    public final StructType inferSchema(CaseInsensitiveStringMap options) {
        return new StructType();
    }

    @Override
    public final Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new WriteOnlyTable();
    }

    /** The table: accepts any columns, writes batches. */
    private final class WriteOnlyTable implements SupportsWrite {
        @Override
        public String name() {
            return name;
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
            return write.apply(info);
        }
    }
}
