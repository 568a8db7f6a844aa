package io.github.airflowprovidereos.writer;

import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** A write of this jar's data sources: its own builder, its own write, one batch (a micro-batch's output). */
abstract class OneBatchWrite implements WriteBuilder, Write, BatchWrite {
    @Override
    public final Write build() {
        return this;
    }

    @Override
    public final BatchWrite toBatch() {
        return this;
    }
}
