package io.github.airflowprovidereos.writer;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * One spill file: a partition's rows as one Arrow IPC stream, in record batches the driver reads one at a time.
 *
 * <p>The rows go through Spark's own {@code ArrowWriter} (what {@code mapInArrow} hands Python), so
 * the file holds exactly the Arrow the Python spill wrote. A record batch ends at Spark's
 * {@code spark.sql.execution.arrow.maxRecordsPerBatch} rows (none: no limit), or earlier once it
 * holds {@code maxBytesPerBatch} (large records): the size is asked every {@link #SIZE_CHECK_ROWS}
 * rows, not after every row, which is what makes Spark's own batching quadratic on a list column of
 * nulls, so a batch may pass the byte bound by up to that many rows less one.
 * The file is created at the first row: an empty partition has none.
 */
final class SpillFile implements AutoCloseable {
    static final int SIZE_CHECK_ROWS = 256;

    /** Spark's Arrow settings, read on the driver. */
    record Settings(int maxRecordsPerBatch, long maxBytesPerBatch, String timeZone, boolean largeVarTypes)
            implements Serializable {
    }

    private final Path path;
    private final FileSystem fs;
    private final StructType schema;
    private final Settings settings;
    private final String owner;
    private BufferAllocator allocator;
    private VectorSchemaRoot root;
    private ArrowWriter arrow;
    private FSDataOutputStream out;
    private ArrowStreamWriter stream;
    private boolean created;
    private int inBatch;
    private long bytes = -1;

    SpillFile(String folder, String name, Configuration conf, StructType schema, Settings settings) {
        this.path = new Path(folder, name);
        this.schema = schema;
        this.settings = settings;
        this.owner = "eos spill " + name;
        try {
            FileSystem found = path.getFileSystem(conf);
            // Local files without Hadoop's .crc companions: the driver reads them with pyarrow, and the
            // shared instance's checksum setting is Spark's business.
            this.fs = found instanceof ChecksumFileSystem ? ((ChecksumFileSystem) found).getRawFileSystem() : found;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the filesystem of the spill file " + path, e);
        }
    }

    /** The file as its filesystem names it. */
    String path() {
        return fs.makeQualified(path).toString();
    }

    /** Whether a row was written (the file exists). */
    boolean created() {
        return created;
    }

    void write(InternalRow row) {
        if (out == null) {
            open();
        }
        arrow.write(row);
        inBatch++;
        int maxRecords = settings.maxRecordsPerBatch();
        if ((maxRecords > 0 && inBatch >= maxRecords)
                || (inBatch % SIZE_CHECK_ROWS == 0 && arrow.sizeInBytes() >= settings.maxBytesPerBatch())) {
            writeBatch();
        }
    }

    /** Write the last record batch and end the stream; returns the file's size (0: no file). */
    long finish() {
        if (out == null) {
            return 0;
        }
        try {
            if (inBatch > 0) {
                writeBatch();
            }
            stream.end();
            bytes = out.getPos();
            out.close();
            out = null;
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot complete the spill file " + path, e);
        }
    }

    /** Remove the file, if this attempt created it (a failed attempt's; best effort). */
    void delete() {
        try {
            closeStream();
        } catch (IOException e) {
            System.err.println("EOS-SPILL could not close " + path + ": " + e);
        }
        try {
            fs.delete(path, false);
        } catch (IOException e) {
            // Never read (it is in no report); the batch's folder goes after the batch.
            System.err.println("EOS-SPILL could not remove " + path + ": " + e);
        }
    }

    private void open() {
        allocator = ArrowUtils.rootAllocator().newChildAllocator(owner, 0, Long.MAX_VALUE);
        root = VectorSchemaRoot.create(ArrowUtils.toArrowSchema(schema, settings.timeZone(), true,
                settings.largeVarTypes()), allocator);
        arrow = ArrowWriter.create(root);
        try {
            out = fs.create(path, false);
            created = true;
            stream = new ArrowStreamWriter(root, null, out);
            stream.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create the spill file " + path, e);
        }
    }

    private void writeBatch() {
        arrow.finish();
        try {
            stream.writeBatch();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write to the spill file " + path, e);
        }
        arrow.reset();
        inBatch = 0;
    }

    private void closeStream() throws IOException {
        if (out != null) {
            FSDataOutputStream open = out;
            out = null;
            open.close();
        }
    }

    /** Free the Arrow buffers (and close the file if it is still open). */
    @Override
    public void close() {
        try {
            closeStream();
        } catch (IOException e) {
            System.err.println("EOS-SPILL could not close " + path + ": " + e);
        } finally {
            try {
                if (root != null) {
                    root.close();
                }
            } finally {
                if (allocator != null) {
                    allocator.close();
                }
            }
        }
    }
}
