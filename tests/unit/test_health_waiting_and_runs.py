"""The verdicts that must not stop a healthy job: input that just arrived after an idle spell, an upstream
producer's long transaction on an input partition, an ``available_now`` pipeline between runs.

Thresholds (tests/support/health_samples.py): warn after 20s, stop after 40s, output hangs after 10s,
input after 30s.
"""

from __future__ import annotations

from airflow_provider_eos.core.health import (
    HealthSample,
    HealthStatus,
    HealthThresholds,
    InputPartitionSample,
    LagStatus,
    LagWindow,
    WatchMode,
    WatchOutcome,
    watch_outcome,
)
from airflow_provider_eos.core.health.commit_age import input_waiting_ms
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.usecases.health import evaluate as evaluate_spec
from tests.support.health_samples import IN0, IN1, SECOND, T0, TH, VerificationSample, finding, out, part, run, sample

# -- commit age: how long input has waited, not how old the last commit is ---------------------


def test_input_arriving_after_an_idle_spell_is_not_a_stopped_job() -> None:
    # Committed at 0, idle (lag 0) until 100s; 3 records arrive before the sample at 105s.
    idle = [sample(t, [part(500, 500)], commit_s=0) for t in (60, 80, 100)]
    arrived = sample(105, [part(503, 500)], commit_s=0)
    report = run([*idle, arrived])
    (found,) = finding(report, "commit_age")
    assert found.status is HealthStatus.HEALTHY, found.detail
    assert "committed 1m45s ago, but the sample 5s ago saw no input waiting on orders-0" in found.detail
    assert watch_outcome(report, WatchMode.WATCH, T0) is None


def test_input_left_waiting_past_the_thresholds_is_degraded_then_unhealthy() -> None:
    idle = [sample(t, [part(500, 500)], commit_s=0) for t in (60, 100)]
    waiting = [sample(t, [part(503, 500)], commit_s=0) for t in (105, 125, 145)]
    assert finding(run([*idle, *waiting[:2]]), "commit_age")[0].status is HealthStatus.DEGRADED  # 20s
    report = run([*idle, *waiting])  # the oldest input has waited 40s: stop
    (found,) = finding(report, "commit_age")
    assert found.status is HealthStatus.UNHEALTHY and "the oldest for at least 40s" in found.detail
    assert watch_outcome(report, WatchMode.WATCH, T0) is WatchOutcome.UNHEALTHY


def test_the_oldest_waiting_partition_decides() -> None:
    samples = [sample(0, [part(10, 5, tp=IN0), part(10, 10, tp=IN1)], commit_s=-100),
               sample(30, [part(10, 5, tp=IN0), part(12, 10, tp=IN1)], commit_s=-100)]
    # IN0 waited the whole window and the broker says at least 40s; IN1 since the last sample.
    samples[-1] = sample(30, [part(10, 5, tp=IN0, waiting_s=40), part(12, 10, tp=IN1)], commit_s=-100)
    assert input_waiting_ms(samples) == 40 * SECOND
    assert input_waiting_ms(samples[:1]) is None  # lag in the one sample, no broker reading: unknown


def test_one_sample_uses_the_brokers_record_timestamps() -> None:
    old_commit = dict(commit_s=0, last_committed=12)
    assert finding(run([sample(600, [part(503, 500, waiting_s=0)], **old_commit)]), "commit_age")[0].status \
        is HealthStatus.HEALTHY
    assert finding(run([sample(600, [part(503, 500, waiting_s=20)], **old_commit)]), "commit_age")[0].status \
        is HealthStatus.DEGRADED
    (found,) = finding(run([sample(600, [part(503, 500, waiting_s=40)], **old_commit)]), "commit_age")
    assert found.status is HealthStatus.UNHEALTHY and "batch 12 committed 10m00s ago" in found.detail
    # Not read (a sample of an older release): the commit age decides, as it did.
    assert finding(run([sample(600, [part(503, 500)], **old_commit)]), "commit_age")[0].status \
        is HealthStatus.UNHEALTHY


def test_a_commit_within_the_wait_is_progress() -> None:
    # Lag all along and old input, but a batch committed 5s ago: the job works through it.
    report = run([sample(600, [part(900, 500, waiting_s=40)], commit_s=595)])
    assert finding(report, "commit_age")[0].status is HealthStatus.HEALTHY


def test_a_run_that_just_started_had_no_chance_to_commit_yet() -> None:
    report = run([sample(600, [part(900, 500, waiting_s=40)], commit_s=0, run_active=True,
                         run_started_at_ms=T0 + 590 * SECOND)])
    (found,) = finding(report, "commit_age")
    assert found.status is HealthStatus.HEALTHY and "this run's driver started 10s ago" in found.detail


def test_the_reviewers_idle_stream_no_longer_fails_the_watch() -> None:
    """tests in /tmp/review-F: an idle spell longer than stop_after, then 3 records before the next trigger."""
    spec = PipelineSpec(name="p", kafka={"bootstrap.servers": "x:9092"}, input_topics=["in"], output_topic="out",
                        group_id="g", transactional_id_prefix="p-eos", checkpoint_location="/data/ck/p",
                        trigger="10 seconds")
    tp = TopicPartition("in", 0)
    start, commit = T0, T0 + 60_000
    window = LagWindow(max_samples=10)

    def at(i: int, lso: int) -> HealthSample:
        return HealthSample(taken_at_ms=start + i * 30_000, last_committed=12, last_commit_time_ms=commit,
                            inputs=(InputPartitionSample(tp=tp, lso=lso, hwm=lso, committed=500, marker_batch=12),))

    for i in range(1, 10):
        window.add(at(i, 500))  # idle: caught up
    window.add(at(14, 503))  # 3 records arrived; the 10 s trigger has not fired yet
    report = evaluate_spec(spec, window)
    assert report.is_healthy, [f.detail for f in report.problems]
    assert watch_outcome(report, WatchMode.WATCH, start) is None


# -- hanging input partitions: the brokers' maximum, and no stop -------------------------------


def test_an_input_partition_hangs_after_the_input_threshold_not_the_sinks() -> None:
    pinned = [sample(t, [part(40, 40, hwm=60)]) for t in (0, 15)]
    assert {g.tp: g.state for g in run(pinned).gaps} == {IN0: "pinned"}  # 15s: the sink's 10s would hang it
    assert run(pinned).status is HealthStatus.HEALTHY


def test_an_input_partition_pinned_by_an_upstream_transaction_does_not_fail_the_watch() -> None:
    samples = [sample(t, [part(40, 40, hwm=60)]) for t in (0, 15, 30)]
    report = run(samples)
    assert [f.signal for f in report.problems] == ["input_hanging"] and not report.is_healthy
    assert watch_outcome(report, WatchMode.WATCH, T0 - 600 * SECOND) is None  # had its chance: still no stop
    # A hanging output partition beside it still fails the watch.
    both = run([sample(t, [part(40, 40, hwm=60)], outputs=[out(5, 9)]) for t in (0, 15, 30)])
    assert watch_outcome(both, WatchMode.WATCH, T0) is WatchOutcome.UNHEALTHY


def test_the_input_threshold_is_the_brokers_maximum_transaction_timeout_or_kafkas_default() -> None:
    spec = PipelineSpec(name="p", kafka={"bootstrap.servers": "x:9092"}, input_topics=["in"], output_topic="out",
                        group_id="g", transactional_id_prefix="p-eos", checkpoint_location="/data/ck/p",
                        trigger="10 seconds")
    assert HealthThresholds.from_spec(spec).input_hang_after_ms == 900_000
    assert HealthThresholds.from_spec(spec, transaction_max_timeout_ms=3_600_000).input_hang_after_ms == 3_600_000
    tp = TopicPartition("in", 0)

    def pinned(t_s: int, brokers_max: int | None) -> HealthSample:
        return HealthSample(taken_at_ms=T0 + t_s * SECOND, last_committed=7, last_commit_time_ms=T0,
                            inputs=(InputPartitionSample(tp=tp, lso=1000, hwm=1200, committed=1000, marker_batch=7),),
                            transaction_max_timeout_ms=brokers_max)

    # The reviewer's case: an upstream transaction open 90s, the sink's timeout 60s: not hanging.
    assert evaluate_spec(spec, LagWindow([pinned(t, None) for t in (0, 30, 60, 90)])).is_healthy
    # Past the brokers' maximum it hangs, and the finding says where the limit came from.
    report = evaluate_spec(spec, LagWindow([pinned(t, 60_000) for t in (0, 30, 60, 90)]))
    (found,) = finding(report, "input_hanging")
    assert "hanging after 1m00s: the brokers' transaction.max.timeout.ms" in found.detail
    report = evaluate_spec(spec, LagWindow([pinned(t, None) for t in (0, 600, 1200)]))
    (found,) = finding(report, "input_hanging")
    assert "Kafka's default transaction.max.timeout.ms; the brokers' own setting was not read" in found.detail
    report = evaluate_spec(spec, LagWindow([pinned(t, None) for t in (0, 30, 60, 90)]),
                           thresholds={"input_hang_after_ms": 60_000})
    assert "input_hang_after_ms" in finding(report, "input_hanging")[0].detail


def test_a_pinned_input_judged_by_kafkas_default_because_the_brokers_were_unreadable_says_so_and_the_fix() -> None:
    spec = PipelineSpec(name="p", kafka={"bootstrap.servers": "x:9092"}, input_topics=["in"], output_topic="out",
                        group_id="g", transactional_id_prefix="p-eos", checkpoint_location="/data/ck/p",
                        trigger="10 seconds")
    tp = TopicPartition("in", 0)
    refused = "Kafka refused User:p-health DescribeConfigs: it needs DESCRIBE_CONFIGS on CLUSTER 'kafka-cluster'"

    def taken(t_s: int, hwm: int = 1200, brokers_max: int | None = None, unread: str | None = refused) -> HealthSample:
        return HealthSample(taken_at_ms=T0 + t_s * SECOND, last_committed=7, last_commit_time_ms=T0,
                            inputs=(InputPartitionSample(tp=tp, lso=1000, hwm=hwm, committed=1000, marker_batch=7),),
                            transaction_max_timeout_ms=brokers_max, transaction_max_timeout_unread=unread)

    report = evaluate_spec(spec, LagWindow([taken(0), taken(30)]))
    (note,) = [n for n in report.notes if "input_hang_after_ms" in n]
    assert note.startswith("input_hang_after_ms is Kafka's default (15m00s): the brokers' transaction.max.timeout.ms "
                           "could not be read; grant the health principal DESCRIBE_CONFIGS on the cluster, or set "
                           "input_hang_after_ms to it."), note
    assert len(note.split(". Refused")[0]) <= 200, "the first sentence is what a card's note shows"
    # The grant is `eos acls` with health's opt-in, the command that applies exactly it (design note 71).
    assert (f"Refused: {refused}. Grant, as an administrator: `eos acls --spec FILE --principal User:NAME --role "
            "health --broker-configs --apply --admin-config ADMIN_CONFIG.json`, FILE being the spec of 'p'") in note
    assert "kafka-acls.sh" not in note
    assert "eos health --threshold input_hang_after_ms=MS" in note
    # Nothing to say: no input partition pinned, the brokers' value read, or a threshold the user set.
    assert not evaluate_spec(spec, LagWindow([taken(0, hwm=1000)])).notes
    assert not evaluate_spec(spec, LagWindow([taken(0, brokers_max=3_600_000, unread=None)])).notes
    assert not evaluate_spec(spec, LagWindow([taken(0)]), thresholds={"input_hang_after_ms": 3_600_000}).notes


# -- available_now between runs ----------------------------------------------------------------


def test_an_available_now_pipeline_between_runs_is_idle_not_stopped() -> None:
    between = [sample(t, [part(5250, 5000, waiting_s=40)], commit_s=-3600, run_active=False) for t in (0, 10, 20)]
    report = run(between, TH.with_overrides({"stop_after_ms": 10 * SECOND}))
    assert report.is_healthy, [f.detail for f in report.problems]
    (age,) = finding(report, "commit_age")
    assert "idle between runs" in age.detail and "250 input record(s) wait for the next run" in age.detail
    assert [(row.status, row.detail) for row in report.partitions] == [
        (LagStatus.OK, "idle between runs: 250 record(s) wait for the next run")]


def test_between_runs_the_other_checks_still_apply() -> None:
    behind = VerificationSample(verdict="KAFKA_BEHIND", ok=False, next_step="Rewind")
    report = run([sample(t, [part(5250, 5000)], commit_s=-3600, run_active=False, verification=behind,
                         outputs=[out(5, 9)]) for t in (0, 10, 20)])
    assert {f.signal for f in report.problems} == {"verification", "hanging"}


def test_the_shipped_available_now_example_between_runs_is_healthy() -> None:
    spec = PipelineSpec.load("dags/pipelines/orders_enrich.yaml")
    assert spec.trigger_interval_ms is None
    tp = TopicPartition("orders", 0)
    now = T0

    def between(i: int, run_active: bool | None) -> HealthSample:
        return HealthSample(taken_at_ms=now + i * 10_000, last_committed=41, last_commit_time_ms=now - 3_600_000,
                            inputs=(InputPartitionSample(tp=tp, lso=5250, hwm=5250, log_start=0, committed=5000,
                                                         marker_batch=41, waiting_ms=None),),
                            run_active=run_active)

    assert evaluate_spec(spec, LagWindow(between(i, False) for i in range(3))).is_healthy
    # A run that is active and left its input an hour old is judged as any job is.
    assert not evaluate_spec(spec, LagWindow(between(i, True) for i in range(3))).is_healthy
