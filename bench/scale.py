"""The Airflow-side work at scale: verification, the transaction scans and pre-flight.

* Verification: a synthetic checkpoint in Spark's on-disk format (``metadata``,
  ``sources/0/0``, ``offsets/N`` and ``commits/N`` with Hadoop ``.crc`` sidecars) over
  ``partitions`` input partitions (100 topics), plus synthetic committed offsets with markers;
  :func:`verify_checkpoint` is timed as the CLI and the operator call it (listing the logs,
  reading ``metadata`` and the needed ``offsets/N``, classifying every partition), in three
  situations: IN_SYNC, KAFKA_AHEAD_SAFE (batch C+1 in Kafka) and KAFKA_BEHIND (marker C-3).
  Rendering the report (text table, every row) and ``to_dict`` are timed separately.
* Transactions: :func:`find_lingering` over ``transactions`` described transactions (80 % under
  the prefix, mixed states, one partition each, the rest foreign), :func:`find_hanging` over
  DescribeProducers answers for ``partitions`` partitions, and :func:`plan_abort` on both.
* Pre-flight: :func:`evaluate` of the whole catalog on synthetic facts for a spec with
  ``topics`` input topics (4 partitions each, group offsets with markers, 20 other specs for the
  sharing rules, the internal topics as a three-broker cluster has them); and live:
  :func:`gather_facts` against the bench broker with that many real topics, then :func:`evaluate`
  on what it gathered.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.acls import INTERNAL_TOPICS
from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.preflight import (
    CheckpointFacts,
    InternalTopicFacts,
    PreflightFacts,
    TopicFacts,
    evaluate,
)
from airflow_provider_eos.core.presentation import verification_text
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactional_ids import transactional_id
from airflow_provider_eos.core.transactions import (
    ProducerState,
    Transaction,
    TransactionListing,
    TxnState,
    find_hanging,
    find_lingering,
    plan_abort,
)
from airflow_provider_eos.core.verification import verify_checkpoint
from airflow_provider_eos.kafka.settings import sink_producer_config
from bench.kafka_io import create_topics, delete_topics, unique
from bench.measure import loadavg, log, summarize

TOPICS_FOR_PARTITIONS = 100


def _repeat(call: Callable[[], Any], repetitions: int) -> tuple[dict[str, Any], Any]:
    seconds, result = [], None
    for _ in range(repetitions):
        started = time.perf_counter()
        result = call()
        seconds.append(time.perf_counter() - started)
    return summarize([s * 1000 for s in seconds], 2), result


# -- verification -------------------------------------------------------------------------------


def _partitions(count: int) -> list[TopicPartition]:
    per_topic = max(1, count // TOPICS_FOR_PARTITIONS)
    return [TopicPartition(f"bench-in-{i // per_topic:03d}", i % per_topic) for i in range(count)]


def _offset(batch: int, index: int) -> int:
    return 1000 * (batch + 1) + index % 997


def write_checkpoint(root: Path, partitions: list[TopicPartition], *, planned: int, committed: int,
                     query_id: str) -> None:
    """Spark's files for a stateless Kafka query: batches 0..planned in offsets/, 0..committed in commits/."""

    def put(relative: str, data: bytes) -> None:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        (path.parent / f".{path.name}.crc").write_bytes(b"crc\x00" + path.name.encode())

    def offsets_json(batch: int | None) -> str:
        by_topic: dict[str, dict[str, int]] = {}
        for index, tp in enumerate(partitions):
            by_topic.setdefault(tp.topic, {})[str(tp.partition)] = 0 if batch is None else _offset(batch, index)
        return json.dumps(by_topic, separators=(",", ":"))

    put("metadata", json.dumps({"id": query_id}).encode())
    put("sources/0/0", b"\x00v1\n" + offsets_json(None).encode())
    for batch in range(planned + 1):
        meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + batch, "conf": {}},
                          separators=(",", ":"))
        put(f"offsets/{batch}", f"v1\n{meta}\n{offsets_json(batch)}".encode())
    for batch in range(committed + 1):
        put(f"commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')


def verification(work_dir: Path, *, partitions: int, repetitions: int) -> dict[str, Any]:
    tps = _partitions(partitions)
    query_id = str(uuid.uuid4())
    committed_batch = 9
    scenarios = {
        "IN_SYNC": (committed_batch, committed_batch),
        "KAFKA_AHEAD_SAFE": (committed_batch + 1, committed_batch + 1),
        "KAFKA_BEHIND": (committed_batch, committed_batch - 3),
    }
    results: dict[str, Any] = {"partitions": partitions, "topics": len({tp.topic for tp in tps}),
                               "checkpoint_batches": committed_batch + 1, "scenarios": {}}
    for verdict, (planned, marker_batch) in scenarios.items():
        root = work_dir / f"verify-{partitions}-{verdict.lower()}"
        write_checkpoint(root, tps, planned=planned, committed=committed_batch, query_id=query_id)
        marker = BatchMarker(query_id, marker_batch).encode()
        committed = {tp: CommittedOffset(_offset(marker_batch, i), marker) for i, tp in enumerate(tps)}
        load = loadavg()
        # A fresh reader per call, as each CLI/operator invocation makes one.
        timing, report = _repeat(lambda root=root, committed=committed: verify_checkpoint(
            CheckpointReader(str(root)), committed), repetitions)
        if report.overall.value != verdict or len(report.rows) != partitions:
            raise RuntimeError(f"verification bench: expected {verdict} over {partitions} rows, got "
                               f"{report.overall.value} over {len(report.rows)}")
        render_ms, text = _repeat(lambda report=report: verification_text(report), max(1, repetitions // 2))
        to_dict_ms, _ = _repeat(report.to_dict, max(1, repetitions // 2))
        results["scenarios"][verdict] = {"verify_checkpoint_ms": timing, "render_ms": render_ms,
                                         "to_dict_ms": to_dict_ms, "rendered_chars": len(text),
                                         "loadavg_before": load}
        log(f"verification {partitions:,} partitions {verdict}: median {timing['median']:.0f} ms "
            f"(render {render_ms['median']:.0f} ms)")
    results["worst_median_ms"] = max(s["verify_checkpoint_ms"]["median"] for s in results["scenarios"].values())
    return results


# -- transactions -------------------------------------------------------------------------------


def transactions_scan(*, transactions: int, partitions: int, repetitions: int) -> dict[str, Any]:
    prefix = "bench-eos"
    now = dt.datetime.now(dt.UTC)
    now_ms = int(now.timestamp() * 1000)
    states = [TxnState.ONGOING, TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT]
    described = []
    for i in range(transactions):
        ours = i % 5 != 4
        described.append(Transaction(
            transactional_id=transactional_id(prefix, i) if ours else f"other-app-{i}",
            state=states[i % len(states)], producer_id=10_000 + i, producer_epoch=i % 7,
            start_time_ms=now_ms - (i * 37) % 900_000, timeout_ms=60_000,
            partitions=frozenset({TopicPartition(f"bench-out-{i % 100:03d}", i // 100)}),
        ))
    tps = _partitions(partitions)
    old = now_ms - 2 * 900_000
    producers = {
        tp: [ProducerState(producer_id=20_000 + i, producer_epoch=0, last_sequence=10,
                           last_timestamp_ms=old if i % 50 == 0 else now_ms - 1000, coordinator_epoch=3,
                           current_txn_start_offset=100 if i % 10 == 0 else -1),
             ProducerState(producer_id=30_000 + i, producer_epoch=1, last_sequence=5, last_timestamp_ms=now_ms - 5000,
                           coordinator_epoch=3, current_txn_start_offset=-1)]
        for i, tp in enumerate(tps)
    }
    listings = [
        TransactionListing(transactional_id=transactional_id(prefix, i), producer_id=20_000 + i, state=TxnState.ONGOING)
        for i in range(0, partitions, 100)
    ]
    descriptions = {x.transactional_id: None for x in listings}
    load = loadavg()
    lingering_ms, lingering = _repeat(lambda: find_lingering(prefix, described, now, 60_000), repetitions)
    hanging_ms, hanging = _repeat(lambda: find_hanging(producers, listings, descriptions, now=now,
                                                       max_transaction_timeout_ms=900_000), repetitions)
    plan_ms, plan = _repeat(lambda: plan_abort(prefix, described, hanging, now=now, transaction_timeout_ms=60_000),
                            repetitions)
    log(f"transactions: find_lingering({transactions:,}) {lingering_ms['median']:.1f} ms, "
        f"find_hanging({partitions:,} partitions) {hanging_ms['median']:.1f} ms, plan_abort {plan_ms['median']:.1f} ms")
    return {"transactions": transactions, "partitions": partitions, "loadavg_before": load,
            "find_lingering_ms": lingering_ms, "lingering_found": len(lingering),
            "find_hanging_ms": hanging_ms, "hanging_found": len(hanging),
            "plan_abort_ms": plan_ms, "plan_rows": len(plan)}


# -- pre-flight ---------------------------------------------------------------------------------


def _preflight_spec(bootstrap: str, inputs: list[str], output: str, name: str, checkpoint: str) -> PipelineSpec:
    return PipelineSpec(
        name=name, kafka={"bootstrap.servers": bootstrap}, input_topics=inputs, output_topic=output,
        group_id=f"{name}-sink", transactional_id_prefix=f"{name}-txn", checkpoint_location=checkpoint,
        trigger="10 seconds", batch_budget_ms=20_000, transaction_timeout_ms=60_000,
    )


#: Kafka's partition count of either internal topic (transaction.state.log.num.partitions and
#: offsets.topic.num.partitions default to 50).
INTERNAL_TOPIC_PARTITIONS = 50


def internal_topics_of_three_brokers() -> dict[str, InternalTopicFacts]:
    """``__transaction_state`` and ``__consumer_offsets`` as a healthy three-broker cluster has them.

    Created by Kafka on first use: 50 partitions, each with 3 replicas (the factors the synthetic
    brokers set), all in sync, ``min.insync.replicas`` 2 (``transaction.state.log.min.isr`` for the
    transaction log, the cluster's min ISR for the offsets topic). Without them EOS201 and EOS204
    say "not checked" and the bench times a catalog that skips their work.
    """
    partitions = range(INTERNAL_TOPIC_PARTITIONS)
    return {name: InternalTopicFacts(name, True, replicas={p: 3 for p in partitions},
                                     in_sync={p: 3 for p in partitions}, min_insync_replicas=2)
            for name in INTERNAL_TOPICS}


def synthetic_preflight_facts(topics: int) -> PreflightFacts:
    """Pre-flight's facts of a three-broker cluster for a spec with ``topics`` input topics (4 partitions each),
    group offsets with markers, 20 other specs for the sharing rules and the internal topics."""
    inputs = [f"bench-pf-{i:03d}" for i in range(topics)]
    spec = _preflight_spec("b1:9092,b2:9092,b3:9092", inputs, "bench-pf-out", "bench_pf",
                           "s3a://bucket/checkpoints/bench_pf")
    others = tuple(_preflight_spec("b1:9092", [f"other-{j}-in"], f"other-{j}-out", f"other_{j}",
                                   f"s3a://bucket/checkpoints/other_{j}") for j in range(20))
    query = str(uuid.uuid4())
    marker = BatchMarker(query, 3).encode()
    topic_facts = {t: TopicFacts(t, True, 4, 3, 2, "delete", 7 * 86_400_000, False) for t in [*inputs, "bench-pf-out"]}
    broker = {"transaction.max.timeout.ms": "900000", "transactional.id.expiration.ms": "604800000",
              "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
              "offsets.topic.replication.factor": "3"}
    return PreflightFacts(
        spec=spec, broker_configs={b: dict(broker) for b in (1, 2, 3)}, live_brokers=3, topics=topic_facts,
        internal_topics=internal_topics_of_three_brokers(), group_state="EMPTY", group_members=(),
        group_offsets={TopicPartition(t, p): CommittedOffset(40 + p, marker) for t in inputs for p in range(4)},
        transactions=(), observed_at=dt.datetime.now(dt.UTC), other_specs=(spec, *others),
        checkpoint=CheckpointFacts(spec.checkpoint_location, True, query, 3, 3), master="spark://master:7077",
        producer_config=sink_producer_config(spec),
    )


def preflight_synthetic(*, topics: int, repetitions: int) -> dict[str, Any]:
    facts = synthetic_preflight_facts(topics)
    load = loadavg()
    timing, report = _repeat(lambda: evaluate(facts), repetitions)
    log(f"pre-flight evaluate, {topics} input topics (synthetic): median {timing['median']:.1f} ms, "
        f"{len(report.findings)} rules, ok={report.ok}")
    return {"input_topics": topics, "evaluate_ms": timing, "rules": len(report.findings), "ok": report.ok,
            "errors": [f.code for f in report.errors], "not_checked": [f.code for f in report.not_checked],
            "loadavg_before": load}


def preflight_live(bootstrap: str, work_dir: Path, *, topics: int, repetitions: int) -> dict[str, Any]:
    from airflow_provider_eos.kafka.cluster_facts import gather_facts

    stem = unique("pf")
    inputs = create_topics(bootstrap, [f"{stem}-in-{i:03d}" for i in range(topics)], 4)
    output = create_topics(bootstrap, [f"{stem}-out"], 4)[0]
    try:
        spec = _preflight_spec(bootstrap, inputs, output, stem.replace("-", "_"), str(work_dir / stem / "checkpoint"))
        load = loadavg()
        gather_ms, facts = _repeat(lambda: gather_facts(spec, other_specs=(), master="local[2]"), repetitions)
        evaluate_ms, report = _repeat(lambda: evaluate(facts), repetitions)
    finally:
        delete_topics(bootstrap, [*inputs, output])
    log(f"pre-flight live, {topics} input topics: gather_facts median {gather_ms['median']:.0f} ms, "
        f"evaluate {evaluate_ms['median']:.1f} ms")
    return {"input_topics": topics, "partitions_per_topic": 4, "gather_facts_ms": gather_ms,
            "evaluate_ms": evaluate_ms, "rules": len(report.findings), "not_checked": len(report.not_checked),
            "unavailable": dict(facts.unavailable), "loadavg_before": load}


def run(bootstrap: str, work_dir: Path, *, partitions: int, transactions: int, topics: int,
        repetitions: int) -> dict[str, Any]:
    return {
        "verification": verification(work_dir, partitions=partitions, repetitions=repetitions),
        "transactions": transactions_scan(transactions=transactions, partitions=partitions, repetitions=repetitions),
        "preflight_synthetic": preflight_synthetic(topics=topics, repetitions=repetitions),
        "preflight_live": preflight_live(bootstrap, work_dir, topics=topics, repetitions=max(3, repetitions // 2)),
    }
