package io.github.airflowprovidereos.plan;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.Dependency;
import org.apache.spark.Partition;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.classic.StreamingQuery;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.RDDScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDD;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDDPartition;
import org.apache.spark.sql.execution.datasources.v2.MicroBatchScanExec;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.apache.spark.sql.execution.streaming.runtime.IncrementalExecution;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Reads a micro-batch's executed plan and its Kafka scan's input ranges inside {@code foreachBatch},
 * in one call from the Python driver ({@code airflow_provider_eos/spark/plan_reader.py}), which
 * judges what this returns: the facts only, as one JSON object, never a decision.
 *
 * <p>Where each fact comes from (Spark 4.2), and why reading it has no side effect:
 * <ul>
 *   <li>{@code ForeachBatchSink} hands the batch function a Dataset over {@code LogicalRDD} of the
 *       batch's already built RDD: its executed plan is one {@code RDDScanExec}. The input ranges
 *       come from the {@code DataSourceRDD} in that RDD's lineage, which holds its input partitions
 *       as a constructor value: reading them plans nothing, and they are exactly what the tasks read.
 *   <li>The plan tree is the query's {@code lastExecution.executedPlan} (forced by Spark before the
 *       batch runs), found through the query id Spark sets as the local property
 *       {@code sql.streaming.queryId} on the thread that runs the batch (py4j runs this call on it).
 *       Adaptive execution hides its current plan from {@code children}: the adaptive root's
 *       {@code executedPlan}, a query stage's {@code plan} and a reused exchange's {@code child}
 *       are read as the children instead.
 *   <li>The Kafka classes are the connector's (not a compile dependency of this jar): they are
 *       known by their simple names and read through their public accessors.
 * </ul>
 */
public final class BatchPlanReader {
    /** The local property {@code StreamExecution} sets to the query id on the thread that runs a batch. */
    public static final String QUERY_ID_PROPERTY = "sql.streaming.queryId";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String KAFKA_INPUT_PARTITION = "KafkaBatchInputPartition";
    /** {@code maxFields} of a node's description ({@code simpleString}), which is also cut to this many characters. */
    private static final int MAX_FIELDS = 25;
    private static final int DESCRIPTION_LIMIT = 300;

    private BatchPlanReader() {
    }

    /**
     * The facts of batch {@code batchId}, as a JSON object: {@code error} (with its facts) when the
     * plan cannot be read, otherwise {@code run_id}, {@code plan} (the tree: {@code name},
     * {@code description}, {@code details}, {@code children}), {@code kafka_scans} (micro-batch
     * scans), the one scan's {@code scan_end} offsets (JSON text, or {@code null}) and the {@code ranges} by Spark
     * partition (empty unless the lineage has exactly one data source RDD of Kafka partitions).
     *
     * @param batch the Dataset Spark passed to the batch function
     * @param batchId the batch id passed with it
     * @param session the session that started the query (the batch's own is a clone without it)
     * @param splittingOptions comma-separated names of the Kafka source's range calculator options to report
     * @return the JSON text
     * @throws JsonProcessingException never in practice (the tree is plain values)
     */
    public static String read(Dataset<?> batch, long batchId, SparkSession session, String splittingOptions)
            throws JsonProcessingException {
        ObjectNode out = JSON.createObjectNode();
        SparkPlan own = batch.queryExecution().executedPlan();
        List<RDDScanExec> scans = new ArrayList<>();
        collectRddScans(own, scans);
        if (scans.size() != 1) {
            out.putObject("error").put("kind", "not_foreach_batch").put("rdd_scans", scans.size())
                    .set("plan", tree(own, List.of(), new ArrayList<>()));
            return JSON.writeValueAsString(out);
        }
        List<DataSourceRDD> sources = dataSourceRdds(scans.get(0).rdd());
        ArrayNode ranges = out.putArray("ranges");
        if (sources.size() == 1) {
            inputRanges(sources.get(0), ranges);
        }
        String queryId = batch.sparkSession().sparkContext().getLocalProperty(QUERY_ID_PROPERTY);
        if (queryId == null || queryId.isEmpty()) {
            out.putObject("error").put("kind", "no_query_id");
            return JSON.writeValueAsString(out);
        }
        StreamingQuery query = session.streams().get(queryId);
        if (query == null) {
            out.putObject("error").put("kind", "no_query").put("query_id", queryId);
            return JSON.writeValueAsString(out);
        }
        IncrementalExecution execution = ((StreamingQueryWrapper) query).streamingQuery().lastExecution();
        if (execution == null || execution.currentBatchId() != batchId) {
            ObjectNode error = out.putObject("error").put("kind", "other_execution").put("query_id", queryId);
            if (execution == null) {
                error.putNull("found_batch_id");
            } else {
                error.put("found_batch_id", execution.currentBatchId());
            }
            return JSON.writeValueAsString(out);
        }
        out.put("run_id", query.runId().toString());
        List<MicroBatchScanExec> kafkaScans = new ArrayList<>();
        out.set("plan", tree(execution.executedPlan(), List.of(splittingOptions.split(",")), kafkaScans));
        out.put("kafka_scans", kafkaScans.size());
        out.put("scan_end", kafkaScans.size() == 1 ? kafkaScans.get(0).end().json() : null);
        return JSON.writeValueAsString(out);
    }

    private static List<SparkPlan> children(SparkPlan node) {
        if (node instanceof AdaptiveSparkPlanExec adaptive) {
            return List.of(adaptive.executedPlan());
        }
        if (node instanceof QueryStageExec stage) {
            return List.of(stage.plan());
        }
        if (node instanceof ReusedExchangeExec reused) {
            return List.of(reused.child());
        }
        return CollectionConverters.asJava(node.children());
    }

    private static void collectRddScans(SparkPlan node, List<RDDScanExec> found) {
        if (node instanceof RDDScanExec scan) {
            found.add(scan);
        }
        for (SparkPlan child : children(node)) {
            collectRddScans(child, found);
        }
    }

    private static ObjectNode tree(SparkPlan node, List<String> splittingOptions, List<MicroBatchScanExec> kafkaScans) {
        ObjectNode out = JSON.createObjectNode();
        out.put("name", node.getClass().getSimpleName());
        String description = node.simpleString(MAX_FIELDS);
        out.put("description", description.length() > DESCRIPTION_LIMIT
                ? description.substring(0, DESCRIPTION_LIMIT - 3) + "..." : description);
        ObjectNode details = out.putObject("details");
        if (node instanceof MicroBatchScanExec scan) {
            kafkaScans.add(scan);
            Object stream = scan.stream();
            details.put("stream", stream.getClass().getSimpleName());
            // Only Kafka's stream has a range calculator (the options that split a partition into ranges).
            Object calculator = call(call(stream, "kafkaOffsetReader"), "rangeCalculator");
            if (calculator != null) {
                for (String option : splittingOptions) {
                    Object value = call(calculator, option);
                    if (value instanceof Option<?> set && set.isDefined()) {
                        details.put(option, String.valueOf(set.get()));
                    }
                }
            }
        }
        ArrayNode children = out.putArray("children");
        for (SparkPlan child : children(node)) {
            children.add(tree(child, splittingOptions, kafkaScans));
        }
        return out;
    }

    private static List<DataSourceRDD> dataSourceRdds(RDD<?> rdd) {
        List<DataSourceRDD> found = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        Deque<RDD<?>> pending = new ArrayDeque<>(List.of(rdd));
        while (!pending.isEmpty()) {
            RDD<?> current = pending.pop();
            if (!seen.add(current.id())) {
                continue;
            }
            if (current instanceof DataSourceRDD source) {
                found.add(source);
                continue;
            }
            for (Dependency<?> dependency : CollectionConverters.asJava(current.dependencies())) {
                pending.push(dependency.rdd());
            }
        }
        return found;
    }

    private static void inputRanges(DataSourceRDD source, ArrayNode ranges) {
        for (Partition partition : source.partitions()) {
            Option<InputPartition> input = ((DataSourceRDDPartition) partition).inputPartition();
            // One scan planned them all, so one class: the first partition's tells.
            if (input.isEmpty() || !KAFKA_INPUT_PARTITION.equals(input.get().getClass().getSimpleName())) {
                ranges.removeAll();
                return;
            }
            Object range = call(input.get(), "offsetRange");
            ranges.addObject().put("spark_partition", partition.index())
                    .put("topic", (String) call(range, "topic"))
                    .put("partition", (Integer) call(range, "partition"))
                    .put("from_offset", (Long) call(range, "fromOffset"))
                    .put("until_offset", (Long) call(range, "untilOffset"));
        }
    }

    /** A public no-argument accessor of a connector class, or {@code null} when the object has none. */
    private static Object call(Object target, String accessor) {
        if (target == null) {
            return null;
        }
        try {
            Method method = target.getClass().getMethod(accessor);
            return method.invoke(target);
        } catch (NoSuchMethodException e) {
            return null;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("could not read " + accessor + " of " + target.getClass().getName(), e);
        }
    }
}
