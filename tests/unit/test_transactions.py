"""Lingering and hanging transactions, the safety check and the abort report (pure logic).

Part of the data below is RECORDED: real admin responses from an Apache Kafka 4.1.1 broker
(the ``eos devstack`` single-node KRaft broker) read with kafka-python 3.0.12. On it, one
producer was SIGKILLed inside a transaction (``rec-0``: lingering) and one transactional
batch was written without AddPartitionsToTxn while the broker's
``transaction.partition.verification.enable`` was off (``rec-hang-0``'s producer: hanging).
Apache Kafka's own ``kafka-transactions.sh find-hanging --broker-id 1
--max-transaction-timeout 0`` on that broker printed exactly one row: partition 1, producer
4, start offset 3. The integration tests reproduce the same situation live.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import (
    AbortReport,
    Action,
    HangingReason,
    Outcome,
    PartitionOffsets,
    ProducerState,
    SafetyCheck,
    Transaction,
    TransactionListing,
    TxnState,
    check_safe_to_act,
    default_quiet_period_ms,
    evaluate_safety,
    find_hanging,
    find_lingering,
    format_age,
    hanging_candidates,
    open_under_prefix,
    plan_abort,
    to_epoch_ms,
)

NOW = dt.datetime(2026, 1, 15, 12, 0, 0, tzinfo=dt.UTC)
NOW_MS = to_epoch_ms(NOW)
MINUTE = 60_000


def _txn(
    txn_id: str,
    state: TxnState = TxnState.ONGOING,
    *,
    age_ms: int | None = 5_000,
    timeout_ms: int = 60_000,
    partitions: tuple[TopicPartition, ...] = (TopicPartition("out", 0),),
    producer_id: int = 7,
) -> Transaction:
    return Transaction(
        transactional_id=txn_id,
        state=state,
        producer_id=producer_id,
        producer_epoch=3,
        start_time_ms=None if age_ms is None else NOW_MS - age_ms,
        timeout_ms=timeout_ms,
        partitions=frozenset(partitions),
    )


def _producer(pid: int, *, start: int = 10, idle_ms: int = 20 * MINUTE, coordinator_epoch: int = -1) -> ProducerState:
    return ProducerState(
        producer_id=pid,
        producer_epoch=0,
        last_sequence=4,
        last_timestamp_ms=NOW_MS - idle_ms,
        coordinator_epoch=coordinator_epoch,
        current_txn_start_offset=start,
    )


# -- recorded responses (see module docstring) --------------------------------------------------

RECORDED = json.loads(
    """
{
 "now_ms": 1795315202625,
 "topic": "rec-out-1795315199",
 "list_transactions": [
  {"transactional_id": "rec-hang-0", "producer_id": 4, "state": "Empty"},
  {"transactional_id": "rec-0", "producer_id": 3, "state": "Ongoing"}
 ],
 "describe_transactions": {
  "rec-hang-0": {"state": "Empty", "producer_id": 4, "producer_epoch": 0, "transaction_timeout_ms": 60000,
                 "transaction_start_time_ms": -1, "topic_partitions": [], "coordinator_id": 1},
  "rec-0": {"state": "Ongoing", "producer_id": 3, "producer_epoch": 0, "transaction_timeout_ms": 300000,
            "transaction_start_time_ms": 1795315199975, "topic_partitions": [["rec-out-1795315199", 1]],
            "coordinator_id": 1}
 },
 "describe_producers": {
  "rec-out-1795315199:1": [
   {"producer_id": 3, "producer_epoch": 0, "last_sequence": 2, "last_timestamp": 1795315199973,
    "coordinator_epoch": -1, "current_transaction_start_offset": 0},
   {"producer_id": 4, "producer_epoch": 0, "last_sequence": 0, "last_timestamp": 1795315201572,
    "coordinator_epoch": -1, "current_transaction_start_offset": 3}
  ],
  "rec-out-1795315199:0": []
 }
}
"""
)


def _recorded() -> tuple[
    dt.datetime, list[TransactionListing], dict[str, Transaction | None], dict[TopicPartition, list[ProducerState]]
]:
    now = dt.datetime.fromtimestamp(RECORDED["now_ms"] / 1000, tz=dt.UTC)
    listings = [
        TransactionListing(item["transactional_id"], item["producer_id"], TxnState.parse(item["state"]))
        for item in RECORDED["list_transactions"]
    ]
    descriptions: dict[str, Transaction | None] = {
        txn_id: Transaction(
            transactional_id=txn_id,
            state=TxnState.parse(d["state"]),
            producer_id=d["producer_id"],
            producer_epoch=d["producer_epoch"],
            start_time_ms=d["transaction_start_time_ms"] if d["transaction_start_time_ms"] >= 0 else None,
            timeout_ms=d["transaction_timeout_ms"],
            partitions=frozenset(TopicPartition(t, p) for t, p in d["topic_partitions"]),
            coordinator_id=d["coordinator_id"],
        )
        for txn_id, d in RECORDED["describe_transactions"].items()
    }
    producers = {}
    for key, states in RECORDED["describe_producers"].items():
        topic, partition = key.rsplit(":", 1)
        producers[TopicPartition(topic, int(partition))] = [
            ProducerState(
                producer_id=s["producer_id"],
                producer_epoch=s["producer_epoch"],
                last_sequence=s["last_sequence"],
                last_timestamp_ms=s["last_timestamp"],
                coordinator_epoch=s["coordinator_epoch"],
                current_txn_start_offset=s["current_transaction_start_offset"],
            )
            for s in states
        ]
    return now, listings, descriptions, producers


def test_recorded_responses_give_the_same_hanging_transaction_as_kafkas_tool() -> None:
    now, listings, descriptions, producers = _recorded()
    hanging = find_hanging(producers, listings, descriptions, now=now, max_transaction_timeout_ms=0)
    # kafka-transactions.sh find-hanging --max-transaction-timeout 0 printed exactly this row.
    assert [(h.tp, h.producer.producer_id, h.producer.current_txn_start_offset) for h in hanging] == [
        (TopicPartition(RECORDED["topic"], 1), 4, 3)
    ]
    (only,) = hanging
    assert only.transactional_id == "rec-hang-0"
    assert only.coordinator_state is TxnState.EMPTY
    assert only.reason is HangingReason.PARTITION_NOT_IN_TRANSACTION


def test_recorded_responses_with_the_default_max_timeout_find_nothing_hanging() -> None:
    now, listings, descriptions, producers = _recorded()
    assert find_hanging(producers, listings, descriptions, now=now, max_transaction_timeout_ms=15 * MINUTE) == []
    # Twenty minutes later both open transactions are old enough to be candidates, and only the
    # one the coordinator does not cover is hanging.
    later = now + dt.timedelta(minutes=20)
    hanging = find_hanging(producers, listings, descriptions, now=later, max_transaction_timeout_ms=15 * MINUTE)
    assert [h.producer.producer_id for h in hanging] == [4]


def test_recorded_responses_list_the_sigkilled_transaction_as_lingering() -> None:
    now, _, descriptions, _ = _recorded()
    found = find_lingering("rec", [d for d in descriptions.values() if d], now, 60_000)
    assert [item.transaction.transactional_id for item in found] == ["rec-0"]
    assert found[0].age_ms == RECORDED["now_ms"] - 1795315199975
    assert found[0].timeout_ms == 300_000 and found[0].young and not found[0].overdue


# -- states and formatting ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "state", "is_open", "completing"),
    [
        ("Ongoing", TxnState.ONGOING, True, False),
        ("PrepareCommit", TxnState.PREPARE_COMMIT, True, True),
        ("PrepareAbort", TxnState.PREPARE_ABORT, True, True),
        ("PrepareEpochFence", TxnState.PREPARE_EPOCH_FENCE, True, True),
        ("Empty", TxnState.EMPTY, False, False),
        ("CompleteAbort", TxnState.COMPLETE_ABORT, False, False),
        ("CompleteCommit", TxnState.COMPLETE_COMMIT, False, False),
        ("Dead", TxnState.DEAD, False, False),
        ("SomethingNew", TxnState.UNKNOWN, False, False),
    ],
)
def test_state_parsing_and_classes(raw: str, state: TxnState, is_open: bool, completing: bool) -> None:
    assert TxnState.parse(raw) is state
    assert state.is_open is is_open
    assert state.is_completing is completing


def test_state_parse_accepts_client_enums() -> None:
    from kafka.admin import TransactionState

    assert TxnState.parse(TransactionState.PREPARE_ABORT) is TxnState.PREPARE_ABORT


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, None), (850, "850ms"), (12_000, "12s"), (245_000, "4m05s"), (7_380_000, "2h03m"), (-3_000, "-3s"),
     (3 * 86_400_000 + 4 * 3_600_000, "3d04h")],
)
def test_format_age(ms: int | None, text: str | None) -> None:
    assert format_age(ms) == text


def test_naive_datetimes_count_as_utc() -> None:
    assert to_epoch_ms(NOW.replace(tzinfo=None)) == NOW_MS


# -- lingering ----------------------------------------------------------------------------------


def test_lingering_takes_only_ongoing_transactions_under_the_prefix() -> None:
    transactions = [
        _txn("pfx-0", age_ms=30_000),
        _txn("pfx-12", age_ms=90_000),
        _txn("pfx-1", TxnState.PREPARE_ABORT),
        _txn("pfx-2", TxnState.COMPLETE_ABORT),
        _txn("pfx-3", TxnState.EMPTY, age_ms=None),
        # Look-alikes that are not ids of the scheme for "pfx": never touched.
        _txn("pfx2-0"),
        _txn("pfx-extra-0"),
        _txn("pfx-01"),
        _txn("pfx-"),
        _txn("pfx"),
        _txn("other-0"),
    ]
    found = find_lingering("pfx", transactions, NOW, 60_000)
    assert [item.transaction.transactional_id for item in found] == ["pfx-12", "pfx-0"]  # oldest first
    assert [item.age_ms for item in found] == [90_000, 30_000]
    assert [item.overdue for item in found] == [True, False]
    assert [item.young for item in found] == [False, True]


def test_lingering_never_includes_an_id_outside_the_prefix() -> None:
    foreign = [_txn(txn_id) for txn_id in ("pfx2-0", "pfx-extra-0", "pfx-01", "xpfx-0", "PFX-0")]
    assert find_lingering("pfx", foreign, NOW, 60_000) == []
    assert open_under_prefix("pfx", foreign) == []


def test_lingering_uses_the_spec_timeout_when_the_broker_reports_none() -> None:
    (item,) = find_lingering("pfx", [_txn("pfx-0", timeout_ms=0, age_ms=50_000)], NOW, 40_000)
    assert item.timeout_ms == 40_000 and item.overdue


def test_open_under_prefix_keeps_completing_ones() -> None:
    transactions = [_txn("pfx-0"), _txn("pfx-1", TxnState.PREPARE_COMMIT), _txn("pfx-2", TxnState.EMPTY)]
    assert [t.transactional_id for t in open_under_prefix("pfx", transactions)] == ["pfx-0", "pfx-1"]


# -- hanging ------------------------------------------------------------------------------------

TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)


def test_candidates_are_open_transactions_older_than_the_max_timeout() -> None:
    producers = {
        TP0: [_producer(1, idle_ms=16 * MINUTE), _producer(2, idle_ms=14 * MINUTE), _producer(3, start=-1)],
        TP1: [_producer(4, idle_ms=15 * MINUTE)],  # exactly the timeout: Kafka's tool requires strictly older
    }
    found = hanging_candidates(producers, NOW, 15 * MINUTE)
    assert [(c.tp, c.producer.producer_id) for c in found] == [(TP0, 1)]


def test_no_transactional_id_for_the_producer_is_hanging() -> None:
    (h,) = find_hanging({TP0: [_producer(1)]}, [], {}, now=NOW, max_transaction_timeout_ms=15 * MINUTE)
    assert h.reason is HangingReason.NO_TRANSACTIONAL_ID
    assert h.transactional_id is None and h.coordinator_state is None
    assert h.owner("pfx") == "unattributed"
    assert h.age_ms == 20 * MINUTE


def test_transactional_id_unknown_to_its_coordinator_is_hanging() -> None:
    listings = [TransactionListing("pfx-0", 1, TxnState.ONGOING)]
    (h,) = find_hanging({TP0: [_producer(1)]}, listings, {"pfx-0": None}, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.NOT_DESCRIBED and h.transactional_id == "pfx-0"
    assert h.owner("pfx") == "ours"


def test_partition_outside_the_coordinators_transaction_is_hanging() -> None:
    listings = [TransactionListing("app-3", 1, TxnState.ONGOING)]
    descriptions = {"app-3": _txn("app-3", partitions=(TP1,), producer_id=1)}
    (h,) = find_hanging({TP0: [_producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.PARTITION_NOT_IN_TRANSACTION
    assert h.coordinator_state is TxnState.ONGOING
    assert h.owner("pfx") == "foreign"


def test_partition_the_coordinator_still_covers_is_not_hanging() -> None:
    listings = [TransactionListing("pfx-0", 1, TxnState.PREPARE_COMMIT)]
    descriptions = {"pfx-0": _txn("pfx-0", TxnState.PREPARE_COMMIT, partitions=(TP0,), producer_id=1)}
    assert find_hanging({TP0: [_producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0) == []


def test_listings_for_producer_ids_that_were_not_asked_for_are_ignored() -> None:
    # Kafka's tool ignores such rows; using them would attribute the candidate to a wrong id.
    listings = [TransactionListing("pfx-0", 99, TxnState.ONGOING)]
    descriptions = {"pfx-0": _txn("pfx-0", partitions=(TP0,), producer_id=99)}
    (h,) = find_hanging({TP0: [_producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.NO_TRANSACTIONAL_ID


def test_young_open_transactions_are_never_hanging() -> None:
    producers = {TP0: [_producer(1, idle_ms=MINUTE)]}
    assert find_hanging(producers, [], {}, now=NOW, max_transaction_timeout_ms=15 * MINUTE) == []


def test_partition_offsets_pinned() -> None:
    assert PartitionOffsets(TP0, 3, 7).pinned
    assert not PartitionOffsets(TP0, 7, 7).pinned


# -- safety -------------------------------------------------------------------------------------


def _safety(**overrides: object) -> SafetyCheck:
    args: dict = {
        "last_commit_time": NOW - dt.timedelta(hours=1),
        "now": NOW,
        "transaction_timeout_ms": 60_000,
        "quiet_period_ms": 120_000,
        "force": False,
    }
    args.update(overrides)
    transactions = args.pop("transactions", [])
    return evaluate_safety("pfx", transactions, **args)


def test_safe_when_the_last_commit_is_old_and_nothing_young_is_open() -> None:
    check = _safety(transactions=[_txn("pfx-0", age_ms=10 * MINUTE)])  # overdue: the producer is gone
    assert check.safe and check.may_act and not check.forced


def test_safe_without_a_checkpoint_commit() -> None:
    assert _safety(last_commit_time=None).safe


def test_a_recent_commit_means_alive() -> None:
    check = _safety(last_commit_time=NOW - dt.timedelta(seconds=30))
    assert not check.safe and not check.may_act
    (reason,) = check.reasons
    assert "30s old" in reason and "2m00s" in reason


def test_a_commit_from_the_future_counts_as_recent() -> None:
    # Clock skew between hosts must not turn a live job into a dead one.
    assert not _safety(last_commit_time=NOW + dt.timedelta(minutes=5)).safe


def test_a_young_ongoing_transaction_under_the_prefix_means_alive() -> None:
    check = _safety(transactions=[_txn("pfx-0", age_ms=5_000)])
    (reason,) = check.reasons
    assert "'pfx-0'" in reason and "5s old" in reason and "1m00s" in reason


def test_an_ongoing_transaction_of_unknown_age_counts_as_young() -> None:
    assert not _safety(transactions=[_txn("pfx-0", age_ms=None)]).safe


def test_young_transactions_outside_the_prefix_do_not_count() -> None:
    assert _safety(transactions=[_txn("other-0", age_ms=1_000), _txn("pfx2-0", age_ms=1_000)]).safe


def test_check_safe_to_act_refuses_naming_why_and_how_to_force() -> None:
    with pytest.raises(UnsafeToActError) as raised:
        check_safe_to_act(
            "pfx",
            [_txn("pfx-0", age_ms=5_000)],
            last_commit_time=NOW - dt.timedelta(seconds=10),
            now=NOW,
            transaction_timeout_ms=60_000,
            quiet_period_ms=60_000,
        )
    text = str(raised.value)
    assert "pfx-0" in text and "10s old" in text and "--force" in text


def test_check_safe_to_act_forced_returns_the_overridden_reasons() -> None:
    check = check_safe_to_act(
        "pfx",
        [_txn("pfx-0", age_ms=5_000)],
        last_commit_time=None,
        now=NOW,
        transaction_timeout_ms=60_000,
        quiet_period_ms=60_000,
        force=True,
    )
    assert check.forced and check.may_act and len(check.reasons) == 1


def test_check_safe_to_act_passes_when_safe() -> None:
    check = check_safe_to_act(
        "pfx", [], last_commit_time=None, now=NOW, transaction_timeout_ms=60_000, quiet_period_ms=60_000, force=True
    )
    assert check.safe and not check.forced  # force only matters when something was overridden


def test_default_quiet_period() -> None:
    assert default_quiet_period_ms(60_000, None) == 60_000
    assert default_quiet_period_ms(60_000, 10_000) == 60_000
    assert default_quiet_period_ms(60_000, 45_000) == 90_000


# -- plan and report ----------------------------------------------------------------------------


def _hanging_rows() -> list:
    listings = [TransactionListing("app-3", 2, TxnState.EMPTY), TransactionListing("pfx-1", 3, TxnState.EMPTY)]
    descriptions = {"app-3": _txn("app-3", TxnState.EMPTY, partitions=()), "pfx-1": _txn("pfx-1", TxnState.EMPTY)}
    producers = {
        TP0: [_producer(1, start=4)],
        TP1: [_producer(2, start=9), _producer(3, start=11, coordinator_epoch=5)],
    }
    return find_hanging(producers, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)


def test_plan_fences_lingering_leaves_completing_and_never_shows_foreign_ids() -> None:
    transactions = [
        _txn("pfx-0", age_ms=30_000),
        _txn("pfx-1", TxnState.PREPARE_ABORT),
        _txn("other-0"),
        _txn("pfx2-0"),
    ]
    rows = plan_abort("pfx", transactions, _hanging_rows(), now=NOW, transaction_timeout_ms=60_000)
    summary = [(r.kind, r.transactional_id, r.action) for r in rows]
    assert summary == [
        ("lingering", "pfx-0", Action.FENCE),
        ("completing", "pfx-1", Action.LEAVE_COMPLETING),
        ("hanging", None, Action.ABORT_MARKER),  # unattributed, on the pipeline's own partition
        ("hanging", "app-3", Action.LEAVE_FOREIGN),
        ("hanging", "pfx-1", Action.ABORT_MARKER),
    ]
    ids = {r.transactional_id for r in rows}
    assert "other-0" not in ids and "pfx2-0" not in ids
    hanging_ours = rows[-1]
    assert hanging_ours.start_offset == 11 and hanging_ours.coordinator_epoch == 5
    assert hanging_ours.partitions == (TP1,)
    assert "kafka-transactions.sh abort" in rows[3].detail


def test_report_render_and_dict() -> None:
    rows = plan_abort("pfx", [_txn("pfx-0", age_ms=30_000)], _hanging_rows(), now=NOW, transaction_timeout_ms=60_000)
    done = tuple(r.with_outcome(Outcome.ABORTED if r.action.acts else Outcome.LEFT) for r in rows)
    report = AbortReport(
        prefix="pfx",
        scanned_at=NOW,
        executed=True,
        safety=SafetyCheck(reasons=("transaction 'pfx-0' is ongoing",), forced=True),
        rows=done,
        offsets_before=(PartitionOffsets(TP0, 4, 9), PartitionOffsets(TP1, 9, 12)),
        offsets_after=(PartitionOffsets(TP0, 10, 10), PartitionOffsets(TP1, 9, 13)),
        remaining=tuple(r for r in rows if r.action is Action.LEAVE_FOREIGN),
        hanging_min_age_ms=0,
    )
    text = report.render()
    assert "Forced despite signs that the job is alive" in text
    for expected in ("lingering", "pfx-0", "abort by fencing", "aborted", "30s", "out-0", "LSO before", "Still open"):
        assert expected in text, expected
    assert report.ok  # what is left is not the pipeline's to abort
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is True and data["executed"] is True and data["safety"]["forced"] is True
    assert data["rows"][0]["outcome"] == "aborted"
    assert data["offsets_after"][0] == {"partition": "out-0", "lso": 10, "hwm": 10, "pinned": False}


def test_report_not_ok_when_an_abort_failed_or_ours_remain() -> None:
    (row,) = plan_abort("pfx", [_txn("pfx-0")], [], now=NOW, transaction_timeout_ms=60_000)
    base = {"prefix": "pfx", "scanned_at": NOW, "safety": SafetyCheck(reasons=())}
    failed = AbortReport(executed=True, rows=(row.with_outcome(Outcome.FAILED, "boom"),), **base)
    assert not failed.ok and failed.failures[0].detail == "boom"
    dry = AbortReport(executed=False, rows=(row.with_outcome(Outcome.WOULD_ABORT),), remaining=(row,), **base)
    assert not dry.ok
    assert "without --dry-run" in dry.render()
    empty = AbortReport(executed=True, rows=(), **base)
    assert empty.ok and "(no rows)" in empty.render() and "nothing open" in empty.render()


# -- librdkafka -> kafka-python config ----------------------------------------------------------


def test_kafka_python_config_translates_connection_and_security(caplog: pytest.LogCaptureFixture) -> None:
    from airflow_provider_eos.kafka.transactions_admin import kafka_python_config

    with caplog.at_level(logging.DEBUG, logger="airflow_provider_eos.kafka.transactions_admin"):
        config = kafka_python_config({
            "bootstrap.servers": "b1:9093, b2:9093",
            "client.id": "orders-eos",
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "svc",
            "sasl.password": "s3cr3t-pass",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.certificate.location": "/etc/client.pem",
            "ssl.key.location": "/etc/client.key",
            "ssl.key.password": "k3y-pass",
            "ssl.endpoint.identification.algorithm": "none",
            "socket.timeout.ms": "45000",
            "linger.ms": 20,
            "queue.buffering.max.kbytes": "s3cr3t-looking-value",
        })
    assert config == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "client_id": "orders-eos",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cr3t-pass",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_certfile": "/etc/client.pem",
        "ssl_keyfile": "/etc/client.key",
        "ssl_password": "k3y-pass",
        "ssl_check_hostname": False,
        "request_timeout_ms": 45000,
    }
    logged = caplog.text
    assert "'linger.ms'" in logged and "'queue.buffering.max.kbytes'" in logged
    assert "s3cr3t" not in logged and "k3y" not in logged


def test_kafka_python_config_without_certificate_verification_builds_a_context() -> None:
    import ssl

    from airflow_provider_eos.kafka.transactions_admin import kafka_python_config

    config = kafka_python_config(
        {"bootstrap.servers": "b:9093", "security.protocol": "SSL", "enable.ssl.certificate.verification": "false"}
    )
    assert config["ssl_context"].verify_mode == ssl.CERT_NONE and config["ssl_check_hostname"] is False


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"bootstrap.servers": "b:1", "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism"),
        ({"bootstrap.servers": "b:1", "security.protocol": "TLS"}, "security.protocol"),
        ({"bootstrap.servers": " , "}, "bootstrap.servers"),
        ({"client.id": "x"}, "bootstrap.servers"),
        ({"bootstrap.servers": "b:1", "socket.timeout.ms": "soon"}, "socket.timeout.ms"),
        ({"bootstrap.servers": "b:1", "enable.ssl.certificate.verification": "maybe"}, "enable.ssl"),
    ],
)
def test_kafka_python_config_rejects_what_it_cannot_honour(config: dict, named: str) -> None:
    from airflow_provider_eos.kafka.transactions_admin import KafkaConfigError, kafka_python_config

    with pytest.raises(KafkaConfigError) as raised:
        kafka_python_config(config)
    assert named in str(raised.value) and raised.value.fix


def test_kafka_python_debug_logs_never_show_secrets(caplog: pytest.LogCaptureFixture) -> None:
    from airflow_provider_eos.kafka.transactions_admin import _protect_secrets

    _protect_secrets({"sasl_plain_password": "pw-123456", "ssl_password": "kp-654321"})
    with caplog.at_level(logging.DEBUG, logger="kafka"):
        logging.getLogger("kafka.protocol.parser").debug("Send: %r", b"\x00svc\x00pw-123456")
        logging.getLogger("kafka.admin.client").debug("Starting KafkaAdminClient with configuration: %s", {"a": 1})
        logging.getLogger("kafka.net.connection").debug("harmless %s", "line")
    assert "pw-123456" not in caplog.text
    assert "Starting KafkaAdminClient" not in caplog.text
    assert "harmless line" in caplog.text


def test_fence_refuses_an_id_outside_the_prefix_before_touching_kafka() -> None:
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.transactional_ids import TransactionalIdError
    from airflow_provider_eos.kafka.transactions_admin import fence

    spec = PipelineSpec(
        name="p",
        kafka={"bootstrap.servers": "127.0.0.1:1"},
        input_topics=["in"],
        output_topic="out",
        group_id="g",
        transactional_id_prefix="pfx",
        checkpoint_location="/tmp/ckpt",
    )
    for foreign in ("pfx2-0", "pfx-extra-0", "other-0", "pfx-01"):
        with pytest.raises(TransactionalIdError) as raised:
            fence(spec, foreign)
        assert foreign in str(raised.value)
