"""Pre-flight validation (DESIGN.md section 4): a catalog of rules run before a pipeline starts.

Every rule has a stable code, a severity and a fix. Codes group by area:

``EOS1xx``
    timeouts: trigger interval and batch budget < producer ``transaction.timeout.ms`` <= broker
    ``transaction.max.timeout.ms``; ``message.timeout.ms`` <= ``transaction.timeout.ms``;
    ``transactional.id.expiration.ms`` vs the longest expected pause.
``EOS2xx``
    the Kafka cluster and the pipeline's topics: internal topics' replication vs live brokers,
    topics exist, replication factor, ``min.insync.replicas``, cleanup policy, retention.
``EOS3xx``
    Spark and the checkpoint: ``read_committed`` source, ``failOnDataLoss``, no async progress
    tracking, ``maxOffsetsPerTrigger``, durable checkpoint storage, the checkpoint belongs to
    this pipeline.
``EOS4xx``
    naming and ownership: the sink group has no live members, no lingering transactions under
    the prefix, nothing shared with another pipeline spec.

The input is a plain :class:`PreflightFacts`: the spec plus whatever was read from the cluster,
the checkpoint and the other specs. A fact that is ``None`` was not read (no access, no
connection, not asked for); every rule that needs it reports :attr:`Status.NOT_CHECKED`, with
the reason when the gatherer recorded one, instead of passing silently.

A rule's *severity* is fixed in the catalog; its *status* per run is ``pass``, ``fail`` or
``not_checked``. A report is :attr:`~PreflightReport.ok` when no ``ERROR`` rule failed; warnings
and infos are reported, never fatal.

This module is pure: the facts are gathered live by
:mod:`airflow_provider_eos.kafka.cluster_facts`.
"""

from __future__ import annotations

import datetime as dt
import enum
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eos.core.checkpoint import normalize_location
from airflow_provider_eos.core.errors import EosError, MarkerError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffsets
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.transactions import Transaction, TxnState, format_age, open_under_prefix, to_epoch_ms

__all__ = [
    "DEFAULT_LONGEST_EXPECTED_PAUSE_MS",
    "HEADROOM_FRACTION",
    "KAFKA_BROKER_DEFAULTS",
    "RECOMMENDED_REPLICATION",
    "RULES",
    "CheckpointFacts",
    "Finding",
    "PreflightError",
    "PreflightFacts",
    "PreflightReport",
    "Rule",
    "Severity",
    "Status",
    "TopicFacts",
    "evaluate",
    "rule",
]

#: How long a pipeline may be stopped and still resume, unless :attr:`PreflightFacts.
#: longest_expected_pause_ms` says otherwise: a long weekend (3 days). The spec has no field for
#: it because it is an operational promise, not part of the pipeline's definition; it is
#: compared with ``transactional.id.expiration.ms`` (EOS107) and the input topics' retention
#: (EOS212), both 7 days by Kafka's default, so the defaults pass with room to spare.
DEFAULT_LONGEST_EXPECTED_PAUSE_MS = 3 * 86_400_000

#: Share of ``transaction.timeout.ms`` a batch should leave unused (EOS103): producing, the
#: offset commit and the commit round trip happen after the batch's own work.
HEADROOM_FRACTION = 0.2

#: Replication Kafka recommends for durability; fewer live brokers make a lower factor the best
#: possible, so rules compare against ``min(RECOMMENDED_REPLICATION, live brokers)``.
RECOMMENDED_REPLICATION = 3

#: Kafka's defaults for the broker settings the rules read, used when a broker does not report
#: one (older brokers, a DescribeConfigs answer filtered by ACLs).
KAFKA_BROKER_DEFAULTS: Mapping[str, int] = {
    "transaction.max.timeout.ms": 900_000,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "offsets.topic.replication.factor": 3,
}

# Paths that survive no reboot and are cleaned by tmpfiles / tmpreaper on many hosts.
_TEMP_DIRS = ("/tmp/", "/var/tmp/", "/dev/shm/")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Filesystems that are one host's disk (or memory) however the URL is spelled.
_HOST_LOCAL_SCHEMES = {"file", "local"}
_VOLATILE_SCHEMES = {"memory"}
_READ_COMMITTED = "read_committed"


class PreflightError(EosError):
    """The facts for a pre-flight could not be gathered at all (e.g. no broker reachable)."""


class Severity(enum.StrEnum):
    """How bad a failed rule is: only ``ERROR`` fails the pre-flight."""

    ERROR = "ERROR"
    WARNING = "WARNING"
    INFO = "INFO"


class Status(enum.StrEnum):
    """The outcome of one rule in one run."""

    PASS = "pass"
    FAIL = "fail"
    NOT_CHECKED = "not_checked"


# -- facts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicFacts:
    """What the cluster says about one topic; ``None`` fields were not read.

    :param name: the topic.
    :param exists: whether the cluster has it.
    :param partitions: its partition count.
    :param replication_factor: the smallest replica count over its partitions.
    :param min_insync_replicas: its ``min.insync.replicas``.
    :param cleanup_policy: its ``cleanup.policy`` (``delete``, ``compact`` or both).
    :param retention_ms: its ``retention.ms`` (``-1``: unlimited).
    :param unclean_leader_election: its ``unclean.leader.election.enable``.
    """

    name: str
    exists: bool
    partitions: int | None = None
    replication_factor: int | None = None
    min_insync_replicas: int | None = None
    cleanup_policy: str | None = None
    retention_ms: int | None = None
    unclean_leader_election: bool | None = None


@dataclass(frozen=True)
class CheckpointFacts:
    """What the checkpoint location holds.

    :param location: the spec's ``checkpoint_location``.
    :param exists: whether a checkpoint is there.
    :param query_id: the query id from ``metadata`` (``None`` when there is no checkpoint).
    :param last_committed: the newest batch with a ``commits/`` file.
    :param last_planned: the newest batch with an ``offsets/`` file.
    """

    location: str
    exists: bool
    query_id: str | None = None
    last_committed: int | None = None
    last_planned: int | None = None


@dataclass(frozen=True)
class PreflightFacts:
    """Everything the rules look at. ``None`` means "not read": rules needing it are not checked.

    :param spec: the pipeline under test.
    :param broker_configs: per live broker id, its configuration (name -> value as the admin
        API reports it; ``None`` for sensitive or unset values).
    :param live_brokers: how many brokers the cluster metadata lists as alive.
    :param topics: the pipeline's topics (inputs, output, dead-letter) by name. A pipeline topic
        missing from the mapping was not read.
    :param group_state: the sink group's state (``EMPTY``, ``STABLE``, ``DEAD`` ...).
    :param group_members: the sink group's live members, described for people.
    :param group_offsets: the sink group's committed offsets and metadata per input partition.
    :param transactions: transactions under the pipeline's prefix as their coordinators
        describe them (ids outside the prefix are ignored).
    :param observed_at: when the cluster was read (for transaction ages).
    :param other_specs: the other pipelines known (for sharing checks); ``()`` means "none".
    :param checkpoint: what the checkpoint location holds.
    :param master: the Spark master URL the job will be submitted to.
    :param producer_config: the sink producer's librdkafka config as the sink builds it
        (:func:`airflow_provider_eos.kafka.client_config.sink_producer_config`).
    :param longest_expected_pause_ms: the longest the pipeline may be stopped and still resume.
    :param unavailable: why a fact is ``None`` (fact name -> reason), shown in "not checked".
    """

    spec: PipelineSpec
    broker_configs: Mapping[int, Mapping[str, str | None]] | None = None
    live_brokers: int | None = None
    topics: Mapping[str, TopicFacts] | None = None
    group_state: str | None = None
    group_members: tuple[str, ...] | None = None
    group_offsets: CommittedOffsets | None = None
    transactions: tuple[Transaction, ...] | None = None
    observed_at: dt.datetime | None = None
    other_specs: tuple[PipelineSpec, ...] | None = None
    checkpoint: CheckpointFacts | None = None
    master: str | None = None
    producer_config: Mapping[str, Any] | None = None
    longest_expected_pause_ms: int = DEFAULT_LONGEST_EXPECTED_PAUSE_MS
    unavailable: Mapping[str, str] = field(default_factory=dict)


# -- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcome:
    status: Status
    message: str
    fix: str | None = None


def _pass(message: str) -> _Outcome:
    return _Outcome(Status.PASS, message)


def _fail(message: str, fix: str | None = None) -> _Outcome:
    return _Outcome(Status.FAIL, message, fix)


def _unknown(facts: PreflightFacts, fact: str, what: str) -> _Outcome:
    reason = facts.unavailable.get(fact)
    return _Outcome(Status.NOT_CHECKED, f"not checked: {what} not read" + (f" ({reason})" if reason else ""))


Check = Callable[[PreflightFacts], _Outcome]


@dataclass(frozen=True)
class Rule:
    """One catalog entry.

    :param code: the stable code (``EOS104``).
    :param severity: what a failure means.
    :param title: what the rule checks, in a few words.
    :param fix: what to do when it fails (a failing check may give a more specific fix).
    :param check: the check itself.
    """

    code: str
    severity: Severity
    title: str
    fix: str
    check: Check = field(repr=False)

    def evaluate(self, facts: PreflightFacts) -> Finding:
        """Run the check on ``facts``."""
        outcome = self.check(facts)
        # An INFO finding is a note, not something to fix.
        needs_fix = outcome.status is Status.FAIL and self.severity is not Severity.INFO
        fix = (outcome.fix or self.fix) if needs_fix else None
        return Finding(self.code, self.severity, outcome.status, self.title, outcome.message, fix)


_CATALOG: dict[str, Rule] = {}


def rule(code: str, severity: Severity, title: str, fix: str) -> Callable[[Check], Check]:
    """Register a check in the catalog under ``code`` (codes are unique and never reused)."""

    def register(check: Check) -> Check:
        if code in _CATALOG:
            raise ValueError(f"rule code {code} is registered twice")
        _CATALOG[code] = Rule(code, severity, title, fix, check)
        return check

    return register


# -- helpers -----------------------------------------------------------------------------------


def _ms(value: int) -> str:
    text = format_age(value) or ""
    return f"{value} ms" if value < 1_000 else f"{value} ms ({text})"


def _broker_setting(facts: PreflightFacts, key: str, pick: Callable[[Iterable[int]], int]) -> tuple[int, str] | None:
    """The strictest value of ``key`` over the brokers (``pick`` is ``min`` or ``max``), and who has it.

    The strictest, because any broker may coordinate the pipeline's transactional id or group.
    A broker that does not report the key is taken to run Kafka's default.
    """
    if not facts.broker_configs:
        return None
    values: dict[int, int] = {}
    defaulted: set[int] = set()
    for broker, configs in facts.broker_configs.items():
        raw = configs.get(key)
        if raw is None or not str(raw).strip().lstrip("-").isdigit():
            values[broker] = KAFKA_BROKER_DEFAULTS[key]
            defaulted.add(broker)
        else:
            values[broker] = int(str(raw).strip())
    value = pick(values.values())
    holders = sorted(b for b, v in values.items() if v == value)
    who = f"broker {holders[0]}" if len(holders) == 1 else f"brokers {', '.join(map(str, holders))}"
    if len(values) > 1 and len(set(values.values())) > 1:
        who += f" ({'lowest' if pick is min else 'highest'} of {len(values)} brokers)"
    if set(holders) <= defaulted:
        who += ", Kafka's default: not reported"
    return value, who


def _pipeline_topics(spec: PipelineSpec) -> list[tuple[str, str]]:
    """(role, topic) for every topic the pipeline reads or writes."""
    topics = [("input", t) for t in spec.input_topics] + [("output", spec.output_topic)]
    if spec.dlq_topic:
        topics.append(("dead-letter", spec.dlq_topic))
    return topics


def _sink_topics(spec: PipelineSpec) -> list[tuple[str, str]]:
    return [(role, t) for role, t in _pipeline_topics(spec) if role != "input"]


def _topic_rule(
    facts: PreflightFacts,
    topics: Sequence[tuple[str, str]],
    attribute: str,
    what: str,
    bad: Callable[[TopicFacts, Any], str | None],
) -> _Outcome:
    """Check one topic setting on ``topics``: ``bad`` returns why a topic fails, or ``None``.

    Topics that do not exist (EOS205/EOS206 report them) or whose setting was not read are
    named in the message; the rule is "not checked" only when no topic could be checked.
    """
    if facts.topics is None:
        return _unknown(facts, "topics", "topic metadata and configs were")
    checked: list[tuple[str, TopicFacts]] = []
    missing: list[str] = []
    unread: list[str] = []
    for role, name in topics:
        topic = facts.topics.get(name)
        if topic is not None and not topic.exists:
            missing.append(name)
        elif topic is None or getattr(topic, attribute) is None:
            unread.append(name)
        else:
            checked.append((role, topic))
    notes = []
    if missing:
        notes.append(f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist")
    if unread:
        reason = facts.unavailable.get("topic_configs") or facts.unavailable.get("topics")
        notes.append(f"{what} of {', '.join(unread)} not read" + (f" ({reason})" if reason else ""))
    if not checked:
        return _Outcome(Status.NOT_CHECKED, "not checked: " + "; ".join(notes))
    note = "".join(f"; {n}" for n in notes)
    problems = [f"{role} topic {t.name!r} {problem}" for role, t in checked if (problem := bad(t, facts))]
    if problems:
        return _fail("; ".join(problems) + note)
    values = ", ".join(f"{t.name}={_value(getattr(t, attribute))}" for _, t in checked)
    return _pass(f"{what}: {values}{note}")


def _value(value: object) -> str:
    # Kafka spells booleans in lower case; showing Python's True would not match any config.
    return str(value).lower() if isinstance(value, bool) else str(value)


def _recommended_replication(facts: PreflightFacts) -> int | None:
    if facts.live_brokers is None:
        return None
    return min(RECOMMENDED_REPLICATION, max(facts.live_brokers, 1))


def _settings(spec: PipelineSpec) -> list[tuple[str, str, str]]:
    """Every ``(place, key, value)`` of the spec's ``kafka`` dict and ``spark_conf``."""
    entries = [("kafka", k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in spec.kafka.items()]
    entries += [("spark_conf", k, v) for k, v in spec.spark_conf.items()]
    return entries


def _named(spec: PipelineSpec, suffix: str) -> list[tuple[str, str, str]]:
    """Settings named ``suffix`` or ending in ``.<suffix>`` (case-insensitive).

    Matching the end of the name catches every spelling that could reach the Kafka source:
    ``isolation.level``, ``kafka.isolation.level``, ``spark.some.prefix.failOnDataLoss``.
    """
    wanted = suffix.lower()
    return [(p, k, v) for p, k, v in _settings(spec) if k.lower() == wanted or k.lower().endswith("." + wanted)]


def _scheme(location: str) -> str | None:
    match = _SCHEME_RE.match(normalize_location(location))
    # "C:" would be a Windows drive, never a URL scheme; one letter is not a scheme Spark knows.
    if match is None or len(match.group(1)) == 1:
        return None
    return match.group(1).lower()


def _is_host_local(location: str) -> bool:
    scheme = _scheme(location)
    return scheme is None or scheme in _HOST_LOCAL_SCHEMES


def _canonical_location(location: str) -> str:
    """A checkpoint location spelled one way, so two specs naming the same place compare equal."""
    text = normalize_location(location.strip())
    scheme = _scheme(text)
    if scheme in _HOST_LOCAL_SCHEMES:
        text = re.sub(r"^[A-Za-z]+:(//)?", "", text)
        scheme = None
    if scheme is None:
        return posixpath.normpath(text)
    return text.rstrip("/")


def _is_local_master(master: str) -> bool:
    # local, local[4], local[*,2], local-cluster[2,1,1024]: driver and executors share this host.
    return master.strip().lower().startswith("local")


def _others(facts: PreflightFacts) -> list[PipelineSpec] | None:
    """The other pipelines, without this one (a specs folder usually holds this spec too)."""
    if facts.other_specs is None:
        return None
    return [other for other in facts.other_specs if not _same_pipeline(other, facts.spec)]


def _same_pipeline(a: PipelineSpec, b: PipelineSpec) -> bool:
    # The kafka dict is left out: a connection may replace its settings for one of the two copies.
    left, right = a.to_dict(), b.to_dict()
    left.pop("kafka")
    right.pop("kafka")
    return left == right


def _marker_query_ids(offsets: CommittedOffsets) -> dict[str, int]:
    """Query id -> highest batch among the group's markers; unreadable metadata is skipped."""
    found: dict[str, int] = {}
    for committed in offsets.values():
        if committed is None or not committed.metadata:
            continue
        try:
            marker = BatchMarker.decode(committed.metadata)
        except MarkerError:
            continue
        found[marker.query_id] = max(found.get(marker.query_id, -1), marker.batch_id)
    return found


# == EOS1xx timeouts ===========================================================================


@rule(
    "EOS101",
    Severity.ERROR,
    "trigger interval < transaction.timeout.ms",
    "lower the spec's trigger interval below transaction_timeout_ms, or raise transaction_timeout_ms "
    "(up to the brokers' transaction.max.timeout.ms)",
)
def _trigger_below_timeout(facts: PreflightFacts) -> _Outcome:
    # Under load batches run back to back, each taking about its interval, and the sink's
    # transaction spans the batch: an interval at the timeout plans for aborted transactions.
    spec = facts.spec
    interval = spec.trigger_interval_ms
    if interval is None:
        return _pass(f"trigger is {spec.trigger!r}: no interval to compare")
    timeout = spec.transaction_timeout_ms
    if interval >= timeout:
        return _fail(
            f"trigger {spec.trigger!r} = {_ms(interval)} is not below transaction_timeout_ms {_ms(timeout)}: "
            "a batch that fills its interval outlives its transaction, which the broker then aborts"
        )
    return _pass(f"trigger {_ms(interval)} < transaction_timeout_ms {_ms(timeout)}")


@rule(
    "EOS102",
    Severity.ERROR,
    "batch budget < transaction.timeout.ms",
    "raise transaction_timeout_ms above batch_budget_ms (up to the brokers' transaction.max.timeout.ms), "
    "or lower max_offsets_per_trigger so batches finish sooner and lower batch_budget_ms",
)
def _budget_below_timeout(facts: PreflightFacts) -> _Outcome:
    spec = facts.spec
    if spec.batch_budget_ms is None:
        return _Outcome(
            Status.NOT_CHECKED,
            "not checked: the spec sets no batch_budget_ms (the longest batch you expect); set it to have "
            "it compared with transaction_timeout_ms",
        )
    if spec.batch_budget_ms >= spec.transaction_timeout_ms:
        return _fail(
            f"batch_budget_ms {_ms(spec.batch_budget_ms)} is not below transaction_timeout_ms "
            f"{_ms(spec.transaction_timeout_ms)}: a batch within budget can still have its transaction aborted"
        )
    return _pass(
        f"batch_budget_ms {_ms(spec.batch_budget_ms)} < transaction_timeout_ms {_ms(spec.transaction_timeout_ms)}"
    )


@rule(
    "EOS103",
    Severity.WARNING,
    f"{int(HEADROOM_FRACTION * 100)}% headroom below transaction.timeout.ms",
    f"keep the trigger interval and batch_budget_ms at most {int((1 - HEADROOM_FRACTION) * 100)}% of "
    "transaction_timeout_ms: raise the timeout or shorten batches",
)
def _headroom(facts: PreflightFacts) -> _Outcome:
    # Producing, the offset commit and the EndTxn round trip come after the batch's own work;
    # a batch planned right up to the timeout loses its transaction on the first slow commit.
    spec = facts.spec
    limit = int(spec.transaction_timeout_ms * (1 - HEADROOM_FRACTION))
    durations = {
        name: value
        for name, value in (("trigger interval", spec.trigger_interval_ms), ("batch_budget_ms", spec.batch_budget_ms))
        if value is not None
    }
    if not durations:
        return _Outcome(
            Status.NOT_CHECKED,
            f"not checked: trigger is {spec.trigger!r} and no batch_budget_ms is set, so no batch duration is known",
        )
    over = {name: value for name, value in durations.items() if value > limit}
    if over:
        listed = ", ".join(f"{name} {_ms(value)}" for name, value in over.items())
        return _fail(
            f"{listed} above {_ms(limit)} ({int((1 - HEADROOM_FRACTION) * 100)}% of transaction_timeout_ms "
            f"{_ms(spec.transaction_timeout_ms)})"
        )
    listed = ", ".join(f"{name} {_ms(value)}" for name, value in durations.items())
    return _pass(f"{listed} within {_ms(limit)}")


@rule(
    "EOS104",
    Severity.ERROR,
    "transaction.timeout.ms <= broker transaction.max.timeout.ms",
    "lower the spec's transaction_timeout_ms to the brokers' transaction.max.timeout.ms or below, or raise "
    "transaction.max.timeout.ms on every broker",
)
def _timeout_within_broker_max(facts: PreflightFacts) -> _Outcome:
    found = _broker_setting(facts, "transaction.max.timeout.ms", min)
    if found is None:
        return _unknown(facts, "broker_configs", "the brokers' configs were")
    maximum, who = found
    timeout = facts.spec.transaction_timeout_ms
    if timeout > maximum:
        return _fail(
            f"transaction_timeout_ms {_ms(timeout)} > transaction.max.timeout.ms {_ms(maximum)} of {who}: the "
            "coordinator refuses InitProducerId (INVALID_TRANSACTION_TIMEOUT) and the sink cannot start",
            fix=f"set transaction_timeout_ms to {maximum} or less, or raise transaction.max.timeout.ms on every "
            f"broker to {timeout} or more",
        )
    return _pass(f"transaction_timeout_ms {_ms(timeout)} <= transaction.max.timeout.ms {_ms(maximum)} of {who}")


@rule(
    "EOS105",
    Severity.ERROR,
    "message.timeout.ms <= transaction.timeout.ms",
    "lower the producer's message.timeout.ms to transaction_timeout_ms or below",
)
def _message_timeout(facts: PreflightFacts) -> _Outcome:
    # A send that may retry past the transaction timeout fails only after the broker has
    # aborted the transaction under it; the batch must fail first, while it can still retry.
    config = facts.producer_config
    if config is None:
        return _unknown(facts, "producer_config", "the sink producer's config was")
    timeout = int(config.get("transaction.timeout.ms", facts.spec.transaction_timeout_ms))
    key = "message.timeout.ms" if "message.timeout.ms" in config else "delivery.timeout.ms"
    # librdkafka's default for both names (they are aliases).
    value = int(config.get(key, 300_000))
    requested = facts.spec.kafka.get("message.timeout.ms", facts.spec.kafka.get("delivery.timeout.ms"))
    note = (
        f" (the spec's kafka asks for {requested}; the sink caps it at the transaction timeout)"
        if requested is not None and str(requested) != str(value)
        else ""
    )
    if value > timeout:
        return _fail(f"sink producer {key} {_ms(value)} > transaction.timeout.ms {_ms(timeout)}{note}")
    return _pass(f"sink producer {key} {_ms(value)} <= transaction.timeout.ms {_ms(timeout)}{note}")


@rule(
    "EOS106",
    Severity.WARNING,
    "spec kafka settings reach the sink producer",
    "remove the listed keys from the spec's kafka dict (the sink sets them itself) or set the spec field "
    "that controls them (transaction_timeout_ms)",
)
def _overridden_producer_settings(facts: PreflightFacts) -> _Outcome:
    # A key in the spec that the sink silently replaces misleads whoever reads the spec.
    config = facts.producer_config
    if config is None:
        return _unknown(facts, "producer_config", "the sink producer's config was")

    def text(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    replaced = [
        f"kafka[{key!r}]={text(value)!r} becomes {text(config[key])!r}"
        for key, value in facts.spec.kafka.items()
        if key in config and text(config[key]) != text(value)
    ]
    if replaced:
        return _fail("the sink producer overrides " + "; ".join(replaced))
    return _pass("every kafka setting of the spec reaches the sink producer unchanged")


@rule(
    "EOS107",
    Severity.WARNING,
    "transactional.id.expiration.ms > longest expected pause",
    "raise transactional.id.expiration.ms on the brokers above the longest pause you expect, or plan shorter pauses",
)
def _txn_id_expiration(facts: PreflightFacts) -> _Outcome:
    # After a pause longer than this the coordinator forgets the ids, their producer epochs and
    # any transaction it had not finished: recovery can no longer list, fence or reason about
    # what the stopped job left behind.
    found = _broker_setting(facts, "transactional.id.expiration.ms", min)
    if found is None:
        return _unknown(facts, "broker_configs", "the brokers' configs were")
    expiration, who = found
    pause = facts.longest_expected_pause_ms
    if expiration <= pause:
        return _fail(
            f"transactional.id.expiration.ms {_ms(expiration)} of {who} is not above the longest expected pause "
            f"{_ms(pause)}: the prefix's transactional ids expire while the pipeline is stopped"
        )
    return _pass(f"transactional.id.expiration.ms {_ms(expiration)} of {who} > longest expected pause {_ms(pause)}")


# == EOS2xx Kafka cluster and topics ===========================================================


def _internal_topic_rule(facts: PreflightFacts, key: str, effect: str) -> _Outcome:
    found = _broker_setting(facts, key, max)
    if found is None:
        return _unknown(facts, "broker_configs", "the brokers' configs were")
    if facts.live_brokers is None:
        return _unknown(facts, "live_brokers", "the live broker count was")
    value, who = found
    if value > facts.live_brokers:
        return _fail(
            f"{key} {value} of {who} > {facts.live_brokers} live broker(s): {effect}",
            fix=f"start at least {value} brokers, or lower {key} to {facts.live_brokers} or less on every broker",
        )
    return _pass(f"{key} {value} of {who} <= {facts.live_brokers} live broker(s)")


@rule(
    "EOS201",
    Severity.ERROR,
    "transaction state log replication <= live brokers",
    "start more brokers or lower transaction.state.log.replication.factor",
)
def _txn_log_replication(facts: PreflightFacts) -> _Outcome:
    return _internal_topic_rule(
        facts,
        "transaction.state.log.replication.factor",
        "__transaction_state cannot be created, so no transactional producer can initialize",
    )


@rule(
    "EOS202",
    Severity.ERROR,
    "transaction state log min ISR <= live brokers and replication",
    "lower transaction.state.log.min.isr to at most the live brokers and the state log's replication factor",
)
def _txn_log_min_isr(facts: PreflightFacts) -> _Outcome:
    outcome = _internal_topic_rule(
        facts,
        "transaction.state.log.min.isr",
        "writes to __transaction_state fail (NOT_ENOUGH_REPLICAS), so no transaction can commit",
    )
    if outcome.status is not Status.PASS:
        return outcome
    min_isr = _broker_setting(facts, "transaction.state.log.min.isr", max)
    replication = _broker_setting(facts, "transaction.state.log.replication.factor", min)
    assert min_isr is not None and replication is not None
    if min_isr[0] > replication[0]:
        return _fail(
            f"transaction.state.log.min.isr {min_isr[0]} of {min_isr[1]} > transaction.state.log.replication.factor "
            f"{replication[0]} of {replication[1]}: writes to __transaction_state can never reach enough replicas"
        )
    return _pass(f"{outcome.message}; replication factor {replication[0]}")


@rule(
    "EOS203",
    Severity.WARNING,
    "transaction state log is replicated",
    f"set transaction.state.log.replication.factor to {RECOMMENDED_REPLICATION} (or the broker count if "
    "smaller) before __transaction_state is first created; once it exists, reassign its partitions",
)
def _txn_log_durability(facts: PreflightFacts) -> _Outcome:
    found = _broker_setting(facts, "transaction.state.log.replication.factor", min)
    if found is None:
        return _unknown(facts, "broker_configs", "the brokers' configs were")
    recommended = _recommended_replication(facts)
    if recommended is None:
        return _unknown(facts, "live_brokers", "the live broker count was")
    value, who = found
    if value < recommended:
        return _fail(
            f"transaction.state.log.replication.factor {value} of {who} with {facts.live_brokers} live brokers: "
            "losing one broker loses the state of the transactions it coordinates"
        )
    single = " (a single broker, as in the devstack: nothing to replicate to)" if facts.live_brokers == 1 else ""
    return _pass(f"transaction.state.log.replication.factor {value} of {who}{single}")


@rule(
    "EOS204",
    Severity.ERROR,
    "offsets topic replication <= live brokers",
    "start more brokers or lower offsets.topic.replication.factor",
)
def _offsets_replication(facts: PreflightFacts) -> _Outcome:
    return _internal_topic_rule(
        facts,
        "offsets.topic.replication.factor",
        "__consumer_offsets cannot be created, so the sink cannot commit offsets and batch markers",
    )


def _topics_exist(facts: PreflightFacts, topics: Sequence[tuple[str, str]]) -> _Outcome:
    if facts.topics is None:
        return _unknown(facts, "topics", "topic metadata was")
    known = facts.topics
    missing = [f"{role} topic {name!r}" for role, name in topics if name in known and not known[name].exists]
    unread = [name for _, name in topics if name not in facts.topics]
    if missing:
        verb = "does" if len(missing) == 1 else "do"
        return _fail(f"{', '.join(missing)} {verb} not exist")
    if unread:
        return _Outcome(Status.NOT_CHECKED, f"not checked: topics {', '.join(unread)} were not read")
    described = ", ".join(f"{name} ({facts.topics[name].partitions} partitions)" for _, name in topics)
    return _pass(f"exist: {described}")


@rule(
    "EOS205",
    Severity.ERROR,
    "input topics exist",
    "create the missing input topics, or correct input_topics in the spec",
)
def _inputs_exist(facts: PreflightFacts) -> _Outcome:
    return _topics_exist(facts, [("input", t) for t in facts.spec.input_topics])


@rule(
    "EOS206",
    Severity.ERROR,
    "output and dead-letter topics exist",
    "create the output (and dead-letter) topic with the intended partitions, replication and min.insync.replicas; "
    "relying on auto-creation gives broker defaults",
)
def _sink_topics_exist(facts: PreflightFacts) -> _Outcome:
    return _topics_exist(facts, _sink_topics(facts.spec))


@rule(
    "EOS207",
    Severity.ERROR,
    "min.insync.replicas <= replication factor",
    "lower the topic's min.insync.replicas to its replication factor or below (kafka-configs --alter), or "
    "add replicas (kafka-reassign-partitions)",
)
def _min_isr_vs_rf(facts: PreflightFacts) -> _Outcome:
    # acks=all writes need min.insync.replicas in-sync copies; more than exist can never be met.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        if topic.replication_factor is not None and topic.min_insync_replicas > topic.replication_factor:
            return (
                f"has min.insync.replicas {topic.min_insync_replicas} > replication factor "
                f"{topic.replication_factor}: every acks=all write fails with NOT_ENOUGH_REPLICAS"
            )
        return None

    return _topic_rule(facts, _pipeline_topics(facts.spec), "min_insync_replicas", "min.insync.replicas", bad)


@rule(
    "EOS208",
    Severity.ERROR,
    "sink topics' min.insync.replicas <= live brokers",
    "bring the missing brokers back, or lower min.insync.replicas of the output and dead-letter topics",
)
def _min_isr_vs_live(facts: PreflightFacts) -> _Outcome:
    if facts.live_brokers is None:
        return _unknown(facts, "live_brokers", "the live broker count was")

    def bad(topic: TopicFacts, facts: PreflightFacts) -> str | None:
        assert facts.live_brokers is not None
        if topic.min_insync_replicas > facts.live_brokers:
            return (
                f"has min.insync.replicas {topic.min_insync_replicas} > {facts.live_brokers} live broker(s): "
                "the sink's acks=all writes fail until more brokers are up"
            )
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "min_insync_replicas", "min.insync.replicas", bad)


@rule(
    "EOS209",
    Severity.WARNING,
    "sink topics are replicated",
    f"give the output and dead-letter topics replication factor {RECOMMENDED_REPLICATION} (or the broker count if "
    "smaller) and min.insync.replicas 2",
)
def _sink_durability(facts: PreflightFacts) -> _Outcome:
    recommended = _recommended_replication(facts)
    if recommended is None:
        return _unknown(facts, "live_brokers", "the live broker count was")

    def bad(topic: TopicFacts, facts: PreflightFacts) -> str | None:
        if topic.replication_factor < recommended:
            return (
                f"has replication factor {topic.replication_factor} with {facts.live_brokers} live brokers: losing "
                "one broker loses committed output"
            )
        if (
            topic.replication_factor >= RECOMMENDED_REPLICATION
            and topic.min_insync_replicas is not None
            and topic.min_insync_replicas < 2
        ):
            return (
                f"has replication factor {topic.replication_factor} but min.insync.replicas "
                f"{topic.min_insync_replicas}: a commit acknowledged by one replica is lost with that broker"
            )
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "replication_factor", "replication factor", bad)


@rule(
    "EOS210",
    Severity.WARNING,
    "sink topics are not compact-only",
    "set cleanup.policy=delete (or delete,compact) on the output and dead-letter topics",
)
def _sink_cleanup_policy(facts: PreflightFacts) -> _Outcome:
    # Compaction drops all but the newest record per key, so the output no longer holds one
    # record per input record and counts (in = out + DLQ, duplicates, lost) cannot be audited.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        policies = {p.strip().lower() for p in str(topic.cleanup_policy).split(",") if p.strip()}
        if policies == {"compact"}:
            return "has cleanup.policy=compact: compaction keeps only the newest record per key"
        return None

    return _topic_rule(facts, _sink_topics(facts.spec), "cleanup_policy", "cleanup.policy", bad)


@rule(
    "EOS211",
    Severity.ERROR,
    "unclean leader election is off",
    "set unclean.leader.election.enable=false on the listed topics (and on the brokers)",
)
def _unclean_election(facts: PreflightFacts) -> _Outcome:
    # An out-of-sync replica taking over truncates acknowledged records: committed output
    # vanishes, or input is lost under the checkpoint's offsets.
    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        if topic.unclean_leader_election:
            return "has unclean.leader.election.enable=true: a failover can drop committed records"
        return None

    return _topic_rule(
        facts, _pipeline_topics(facts.spec), "unclean_leader_election", "unclean.leader.election.enable", bad
    )


@rule(
    "EOS212",
    Severity.WARNING,
    "input retention > longest expected pause",
    "raise retention.ms of the input topics above the longest pause you expect",
)
def _input_retention(facts: PreflightFacts) -> _Outcome:
    # Records deleted while the pipeline is stopped are never read; with failOnDataLoss the
    # query then stops instead of silently skipping them.
    pause = facts.longest_expected_pause_ms

    def bad(topic: TopicFacts, _: PreflightFacts) -> str | None:
        if 0 <= topic.retention_ms <= pause:
            return (
                f"has retention.ms {_ms(topic.retention_ms)}, not above the longest expected pause {_ms(pause)}: "
                "records may be deleted before the pipeline reads them"
            )
        return None

    return _topic_rule(facts, [("input", t) for t in facts.spec.input_topics], "retention_ms", "retention.ms", bad)


# == EOS3xx Spark and checkpoint ===============================================================


def _contradicting(spec: PipelineSpec, key: str, good: Callable[[str], bool]) -> list[str]:
    return [f"{place}[{name!r}]={value!r}" for place, name, value in _named(spec, key) if not good(value)]


@rule(
    "EOS301",
    Severity.ERROR,
    "read_committed source",
    "remove isolation.level from the spec (the job reads read_committed), or set it to read_committed",
)
def _read_committed(facts: PreflightFacts) -> _Outcome:
    # Reading uncommitted input would take records of transactions upstream later aborts.
    found = _contradicting(facts.spec, "isolation.level", lambda v: v.strip().lower() == _READ_COMMITTED)
    if found:
        return _fail(f"{', '.join(found)} contradicts the read_committed source of an exactly-once pipeline")
    return _pass("the source reads read_committed; nothing in the spec overrides it")


@rule(
    "EOS302",
    Severity.ERROR,
    "failOnDataLoss on",
    "remove failOnDataLoss=false from the spec: lost input must stop the query, not be skipped",
)
def _fail_on_data_loss(facts: PreflightFacts) -> _Outcome:
    found = _contradicting(facts.spec, "failOnDataLoss", lambda v: v.strip().lower() != "false")
    if found:
        return _fail(f"{', '.join(found)}: Spark would skip deleted or truncated input silently")
    return _pass("the source runs with failOnDataLoss=true; nothing in the spec turns it off")


@rule(
    "EOS303",
    Severity.ERROR,
    "no async progress tracking",
    "remove asyncProgressTrackingEnabled from the spec's spark_conf",
)
def _async_progress(facts: PreflightFacts) -> _Outcome:
    # Async progress tracking commits offsets to the checkpoint before the batch's output is
    # committed, so a crash between the two loses the batch.
    found = [
        f"{place}[{name!r}]={value!r}"
        for place, name, value in _settings(facts.spec)
        if "asyncprogresstracking" in name.lower() and name.lower().endswith("enabled") and value.strip() == "true"
    ]
    if found:
        return _fail(f"{', '.join(found)}: the checkpoint would run ahead of the committed output")
    return _pass("async progress tracking is not enabled")


@rule(
    "EOS304",
    Severity.WARNING,
    "maxOffsetsPerTrigger set",
    "set max_offsets_per_trigger so the first batch after a pause stays within the transaction timeout",
)
def _max_offsets(facts: PreflightFacts) -> _Outcome:
    value = facts.spec.max_offsets_per_trigger
    if value is None:
        return _fail(
            "max_offsets_per_trigger is null: after a pause the first batch takes the whole backlog, which may "
            f"outlast transaction_timeout_ms {_ms(facts.spec.transaction_timeout_ms)}"
        )
    return _pass(f"max_offsets_per_trigger {value}")


@rule(
    "EOS305",
    Severity.ERROR,
    "durable checkpoint storage for a cluster master",
    "put checkpoint_location on storage every cluster node reaches (hdfs://, s3a://, gs://, abfss://), or "
    "run with a local[...] master",
)
def _durable_checkpoint(facts: PreflightFacts) -> _Outcome:
    location = facts.spec.checkpoint_location
    master = facts.master
    if master is None:
        return _Outcome(
            Status.NOT_CHECKED,
            "not checked: no Spark master given (pass master / --master, or set spark.master in spark_conf)",
        )
    if _is_local_master(master):
        return _pass(f"master {master!r} keeps driver and checkpoint on this host; {location!r} is fine")
    if _is_host_local(location):
        return _fail(
            f"checkpoint_location {location!r} is a path on one host but master {master!r} runs the driver on a "
            "cluster node: the checkpoint is lost or split when the driver moves"
        )
    return _pass(f"checkpoint_location {location!r} is shared storage for master {master!r}")


@rule(
    "EOS306",
    Severity.ERROR,
    "checkpoint not in memory",
    "put checkpoint_location on a disk or object store",
)
def _not_in_memory(facts: PreflightFacts) -> _Outcome:
    location = facts.spec.checkpoint_location
    scheme = _scheme(location)
    if scheme in _VOLATILE_SCHEMES:
        return _fail(f"checkpoint_location {location!r} is in memory: it is gone when the process ends")
    return _pass(f"checkpoint_location {location!r} is not in memory")


@rule(
    "EOS307",
    Severity.WARNING,
    "checkpoint not under a temporary directory",
    "move checkpoint_location out of /tmp, /var/tmp and /dev/shm (e.g. under $EOS_HOME or shared storage)",
)
def _not_in_temp(facts: PreflightFacts) -> _Outcome:
    location = facts.spec.checkpoint_location
    if not _is_host_local(location):
        return _pass(f"checkpoint_location {location!r} is not a local path")
    path = _canonical_location(location) + "/"
    if path.startswith(_TEMP_DIRS):
        return _fail(f"checkpoint_location {location!r} is under a temporary directory cleaned on reboot or by age")
    return _pass(f"checkpoint_location {location!r} is not under a temporary directory")


@rule(
    "EOS308",
    Severity.ERROR,
    "the checkpoint belongs to this pipeline",
    "point checkpoint_location at this pipeline's checkpoint (or restore it); to start over on purpose, use a "
    "new group_id and transactional_id_prefix",
)
def _checkpoint_ownership(facts: PreflightFacts) -> _Outcome:
    # The sink's markers name the query that committed them; a checkpoint with another query id
    # (or none at all while markers exist) would replay or skip batches against the wrong history.
    if facts.checkpoint is None:
        return _unknown(facts, "checkpoint", "the checkpoint was")
    if facts.group_offsets is None:
        return _unknown(facts, "group_offsets", "the sink group's committed offsets were")
    markers = _marker_query_ids(facts.group_offsets)
    checkpoint = facts.checkpoint
    found = ", ".join(f"{q} (up to batch {b})" for q, b in sorted(markers.items()))
    if not checkpoint.exists:
        if markers:
            return _fail(
                f"no checkpoint at {checkpoint.location!r}, but group {facts.spec.group_id!r} holds batch markers of "
                f"query {found}: the checkpoint was lost or checkpoint_location changed, and a new query would "
                "re-read input the group says is done"
            )
        return _pass(f"no checkpoint and no batch markers in group {facts.spec.group_id!r}: a first run")
    if not markers:
        return _pass(
            f"checkpoint query {checkpoint.query_id}; group {facts.spec.group_id!r} holds no batch markers yet"
        )
    foreign = {q: b for q, b in markers.items() if q != checkpoint.query_id}
    if foreign:
        listed = ", ".join(f"{q} (up to batch {b})" for q, b in sorted(foreign.items()))
        return _fail(
            f"checkpoint {checkpoint.location!r} has query id {checkpoint.query_id}, but group "
            f"{facts.spec.group_id!r} holds batch markers of query {listed}: the checkpoint or the group belongs "
            "to another pipeline or run"
        )
    return _pass(
        f"checkpoint query {checkpoint.query_id} matches the group's markers (up to batch "
        f"{markers[checkpoint.query_id]})"
    )


@rule(
    "EOS309",
    Severity.WARNING,
    "exactly-once sink mode",
    "set mode: exactly-once (at-least-once is Spark's built-in writer, for baselines only)",
)
def _mode(facts: PreflightFacts) -> _Outcome:
    if facts.spec.mode != "exactly-once":
        return _fail(f"mode is {facts.spec.mode!r}: replays after a failure duplicate output")
    return _pass("mode is 'exactly-once'")


@rule(
    "EOS310",
    Severity.INFO,
    "checkpoint state",
    "none: a note on where the query resumes",
)
def _checkpoint_state(facts: PreflightFacts) -> _Outcome:
    checkpoint = facts.checkpoint
    if checkpoint is None:
        return _unknown(facts, "checkpoint", "the checkpoint was")
    if not checkpoint.exists:
        return _fail(
            f"no checkpoint at {checkpoint.location!r}: the query starts from startingOffsets "
            f"{facts.spec.starting_offsets!r}"
        )
    planned, committed = checkpoint.last_planned, checkpoint.last_committed
    if planned is not None and (committed is None or planned > committed):
        return _fail(
            f"batch {planned} was planned but not committed (last committed: {committed}); the restart replays it "
            "and the sink skips it if its marker is already in the group"
        )
    return _pass(f"last committed batch {committed}; the query resumes after it")


# == EOS4xx naming and ownership ===============================================================


@rule(
    "EOS401",
    Severity.ERROR,
    "the sink group has no live members",
    "stop the consumers in the sink group (the job never joins it), or give the pipeline its own group_id",
)
def _no_live_members(facts: PreflightFacts) -> _Outcome:
    # The sink commits offsets through the producer with the group's metadata; a member
    # rebalancing the group bumps its generation and fences those commits, and its own commits
    # overwrite the batch markers.
    if facts.group_members is None:
        return _unknown(facts, "group", "the sink group's description was")
    state = f" (state {facts.group_state})" if facts.group_state else ""
    if facts.group_members:
        return _fail(
            f"group {facts.spec.group_id!r}{state} has {len(facts.group_members)} live member(s): "
            + ", ".join(facts.group_members)
        )
    return _pass(f"group {facts.spec.group_id!r}{state} has no live members")


@rule(
    "EOS402",
    Severity.WARNING,
    "no lingering transactions under the prefix",
    "abort them before starting: `eos abort --spec FILE` or AbortOpenTransactionsOperator (the pipeline DAG's "
    "next task); the broker aborts them by itself after their timeout",
)
def _no_lingering(facts: PreflightFacts) -> _Outcome:
    # A warning, not an error: aborting them is the recovery step that follows pre-flight, and
    # failing here would keep that step from running. Until then they pin the output's LSO.
    if facts.transactions is None:
        return _unknown(facts, "transactions", "the transactions under the prefix were")
    prefix = facts.spec.transactional_id_prefix
    ongoing = [t for t in open_under_prefix(prefix, facts.transactions) if t.state is TxnState.ONGOING]
    if not ongoing:
        return _pass(f"no ongoing transaction under prefix {prefix!r}")
    now_ms = to_epoch_ms(facts.observed_at) if facts.observed_at else None

    def describe(t: Transaction) -> str:
        age = format_age(t.age_ms(now_ms)) if now_ms is not None and t.start_time_ms is not None else None
        partitions = ", ".join(str(tp) for tp in sorted(t.partitions)) or "no partitions yet"
        opened = f", open {age}" if age else ""
        return (
            f"{t.transactional_id} (producer {t.producer_id} epoch {t.producer_epoch}{opened}, timeout "
            f"{t.timeout_ms} ms, on {partitions})"
        )

    return _fail(
        f"{len(ongoing)} ongoing transaction(s) under prefix {prefix!r}: {'; '.join(map(describe, ongoing))}; "
        "they pin the last stable offset of their partitions"
    )


def _shared(facts: PreflightFacts, what: str, value: Callable[[PipelineSpec], str]) -> _Outcome:
    others = _others(facts)
    if others is None:
        return _unknown(facts, "other_specs", "the other pipeline specs were")
    mine = value(facts.spec)
    sharing = sorted(other.name for other in others if value(other) == mine)
    if sharing:
        return _fail(f"{what} {mine!r} is also used by pipeline(s) {', '.join(sharing)}")
    return _pass(f"{what} {mine!r} is not used by the {len(others)} other pipeline(s)")


@rule(
    "EOS403",
    Severity.ERROR,
    "transactional id prefix not shared",
    "give each pipeline its own transactional_id_prefix: recovery fences and aborts everything under a prefix",
)
def _prefix_not_shared(facts: PreflightFacts) -> _Outcome:
    return _shared(facts, "transactional_id_prefix", lambda s: s.transactional_id_prefix)


@rule(
    "EOS404",
    Severity.ERROR,
    "sink group not shared",
    "give each pipeline its own group_id: the group's markers say which batches of which query are in Kafka",
)
def _group_not_shared(facts: PreflightFacts) -> _Outcome:
    return _shared(facts, "group_id", lambda s: s.group_id)


@rule(
    "EOS405",
    Severity.ERROR,
    "checkpoint location not shared",
    "give each pipeline its own checkpoint_location",
)
def _checkpoint_not_shared(facts: PreflightFacts) -> _Outcome:
    return _shared(facts, "checkpoint_location", lambda s: _canonical_location(s.checkpoint_location))


@rule(
    "EOS406",
    Severity.ERROR,
    "pipeline name unique",
    "rename one of the pipelines: DAG and task ids derive from the name",
)
def _name_unique(facts: PreflightFacts) -> _Outcome:
    if facts.other_specs is None:
        return _unknown(facts, "other_specs", "the other pipeline specs were")
    clashes = [other for other in facts.other_specs if other.name == facts.spec.name]
    different = [other for other in clashes if not _same_pipeline(other, facts.spec)]
    if different:
        return _fail(
            f"another spec is also named {facts.spec.name!r} but describes a different pipeline "
            f"(group_id {different[0].group_id!r}, checkpoint_location {different[0].checkpoint_location!r})"
        )
    return _pass(f"no other pipeline is named {facts.spec.name!r}")


@rule(
    "EOS407",
    Severity.WARNING,
    "the sink group holds only batch markers",
    "check who commits to the sink group: only this pipeline's exactly-once sink may; run `eos verify` before "
    "repairing anything",
)
def _only_markers(facts: PreflightFacts) -> _Outcome:
    # An offset without a marker was committed by something else: an at-least-once run, a
    # consumer, a tool. Verification calls it NO_MARKER and refuses to guess.
    if facts.group_offsets is None:
        return _unknown(facts, "group_offsets", "the sink group's committed offsets were")
    committed = {tp: c for tp, c in facts.group_offsets.items() if c is not None}
    foreign: list[str] = []
    for tp, c in sorted(committed.items()):
        try:
            has_marker = c.marker is not None
        except MarkerError:
            has_marker = False
        if not has_marker:
            foreign.append(f"{tp} {c.describe()}")
    if foreign:
        return _fail(f"group {facts.spec.group_id!r} has offsets not committed by the sink: {'; '.join(foreign)}")
    if not committed:
        return _pass(f"group {facts.spec.group_id!r} has no committed offsets on the input partitions")
    return _pass(f"group {facts.spec.group_id!r}: {len(committed)} committed offset(s), all with batch markers")


#: The catalog, by code.
RULES: tuple[Rule, ...] = tuple(_CATALOG[code] for code in sorted(_CATALOG))


# -- report ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One rule's outcome: a row of the report.

    :param code: the rule's code.
    :param severity: the rule's severity.
    :param status: ``pass``, ``fail`` or ``not_checked``.
    :param title: what the rule checks.
    :param message: what was found, naming the values.
    :param fix: what to do (only for failures).
    """

    code: str
    severity: Severity
    status: Status
    title: str
    message: str
    fix: str | None = None

    @property
    def result(self) -> str:
        """The result as shown in the table: ``ok``, the severity of a failure, or ``not checked``."""
        if self.status is Status.PASS:
            return "ok"
        if self.status is Status.NOT_CHECKED:
            return "not checked"
        return self.severity.value

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-serializable values."""
        return {
            "code": self.code,
            "severity": self.severity.value,
            "status": self.status.value,
            "title": self.title,
            "message": self.message,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class PreflightReport:
    """The pre-flight of one pipeline: one finding per rule, in code order.

    :param pipeline: the pipeline's name.
    :param findings: the findings.
    """

    pipeline: str
    findings: tuple[Finding, ...]

    def _failed(self, severity: Severity) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status is Status.FAIL and f.severity is severity)

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Failed ``ERROR`` rules: any of them fails the pre-flight."""
        return self._failed(Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Failed ``WARNING`` rules."""
        return self._failed(Severity.WARNING)

    @property
    def infos(self) -> tuple[Finding, ...]:
        """``INFO`` rules with something to say."""
        return self._failed(Severity.INFO)

    @property
    def not_checked(self) -> tuple[Finding, ...]:
        """Rules whose facts were not available."""
        return tuple(f for f in self.findings if f.status is Status.NOT_CHECKED)

    @property
    def ok(self) -> bool:
        """True when no ``ERROR`` rule failed (rules not checked do not count as failed)."""
        return not self.errors

    def finding(self, code: str) -> Finding:
        """The finding of rule ``code``.

        :raises KeyError: if no rule has that code.
        """
        for item in self.findings:
            if item.code == code:
                return item
        raise KeyError(code)

    def summary(self) -> str:
        """One line: the verdict and the counts."""
        verdict = "PASSED" if self.ok else "FAILED"
        passed = sum(1 for f in self.findings if f.status is Status.PASS)
        return (
            f"Pre-flight of pipeline {self.pipeline!r}: {verdict} - {len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s), {len(self.infos)} info, {len(self.not_checked)} not checked, "
            f"{passed} passed"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-serializable values (the operator's XCom, ``eos preflight --json``)."""
        return {
            "pipeline": self.pipeline,
            "ok": self.ok,
            "errors": [f.code for f in self.errors],
            "warnings": [f.code for f in self.warnings],
            "infos": [f.code for f in self.infos],
            "not_checked": [f.code for f in self.not_checked],
            "findings": [f.to_dict() for f in self.findings],
        }

    def render(self) -> str:
        """The summary, a table of every rule, then the fix of each failed rule."""
        table = render_table(
            ["code", "severity", "result", "check", "details"],
            [[f.code, f.severity, f.result, f.title, f.message] for f in self.findings],
        )
        lines = [self.summary(), "", table]
        failed = [f for f in self.findings if f.status is Status.FAIL and f.fix]
        if failed:
            lines += ["", "Fixes:"]
            lines += [f"  {f.code} ({f.result}): {f.fix}" for f in failed]
        return "\n".join(lines)


def evaluate(facts: PreflightFacts, rules: Sequence[Rule] = RULES) -> PreflightReport:
    """Run ``rules`` (default: the whole catalog) on ``facts``.

    :param facts: what is known about the pipeline and its cluster.
    :param rules: the rules to run, reported in the given order.
    """
    return PreflightReport(pipeline=facts.spec.name, findings=tuple(r.evaluate(facts) for r in rules))
