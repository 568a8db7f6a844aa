"""EOS4xx: naming and ownership.

The sink group has no live members and holds only the sink's batch markers, no lingering
transactions under the prefix, and nothing (prefix, group, checkpoint, name) shared with
another pipeline spec, nor a prefix whose transactional-id ACL covers another pipeline's ids.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_provider_eos.core.acls import covered_pipelines, transactional_id_pattern
from airflow_provider_eos.core.errors import MarkerError
from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.locations import canonical_location
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, passed, rule, unknown
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.transactions import Transaction, TxnState, format_age, open_under_prefix, to_epoch_ms


def _others(facts: PreflightFacts) -> list[PipelineSpec] | None:
    """The other pipelines, without this one (a specs folder usually holds this spec too)."""
    if facts.other_specs is None:
        return None
    return [other for other in facts.other_specs if not _same_pipeline(other, facts.spec)]


def _same_pipeline(a: PipelineSpec, b: PipelineSpec) -> bool:
    # The kafka dict is left out: a connection may replace its settings for one of the two copies.
    return a.model_dump(mode="json", exclude={"kafka"}) == b.model_dump(mode="json", exclude={"kafka"})


@rule(
    "EOS401",
    Severity.ERROR,
    "the sink group has no live members",
    "stop the consumers in the sink group (the job never joins it), or give the pipeline its own group_id",
)
def _no_live_members(facts: PreflightFacts) -> Outcome:
    # The sink commits offsets through the producer with the group's metadata; a member
    # rebalancing the group bumps its generation and fences those commits, and its own commits
    # overwrite the batch markers.
    if facts.group_members is None:
        return unknown(facts, "group", "the sink group's description was")
    state = f" (state {facts.group_state})" if facts.group_state else ""
    if facts.group_members:
        return failed(
            f"group {facts.spec.group_id!r}{state} has {len(facts.group_members)} live member(s): "
            + ", ".join(facts.group_members)
        )
    return passed(f"group {facts.spec.group_id!r}{state} has no live members")


@rule(
    "EOS402",
    Severity.WARNING,
    "no lingering transactions under the prefix",
    "abort them before starting: `eos abort --spec FILE --execute` or AbortOpenTransactionsOperator (the pipeline "
    "DAG's next task); the broker aborts them by itself after their timeout",
)
def _no_lingering(facts: PreflightFacts) -> Outcome:
    # A warning, not an error: aborting them is the recovery step that follows pre-flight, and
    # failing here would keep that step from running. Until then they pin the output's LSO.
    if facts.transactions is None:
        return unknown(facts, "transactions", "the transactions under the prefix were")
    prefix = facts.spec.transactional_id_prefix
    ongoing = [t for t in open_under_prefix(prefix, facts.transactions) if t.state is TxnState.ONGOING]
    if not ongoing:
        return passed(f"no ongoing transaction under prefix {prefix!r}")
    now_ms = to_epoch_ms(facts.observed_at) if facts.observed_at else None

    def describe(t: Transaction) -> str:
        age = format_age(t.age_ms(now_ms)) if now_ms is not None and t.start_time_ms is not None else None
        partitions = ", ".join(str(tp) for tp in sorted(t.partitions)) or "no partitions yet"
        opened = f", open {age}" if age else ""
        return (
            f"{t.transactional_id} (producer {t.producer_id} epoch {t.producer_epoch}{opened}, timeout "
            f"{t.timeout_ms} ms, on {partitions})"
        )

    return failed(
        f"{len(ongoing)} ongoing transaction(s) under prefix {prefix!r}: {'; '.join(map(describe, ongoing))}; "
        "they pin the last stable offset of their partitions"
    )


def _shared(facts: PreflightFacts, what: str, value: Callable[[PipelineSpec], str]) -> Outcome:
    others = _others(facts)
    if others is None:
        return unknown(facts, "other_specs", "the other pipeline specs were")
    mine = value(facts.spec)
    sharing = sorted(other.name for other in others if value(other) == mine)
    if sharing:
        return failed(f"{what} {mine!r} is also used by pipeline(s) {', '.join(sharing)}")
    return passed(f"{what} {mine!r} is not used by the {len(others)} other pipeline(s)")


@rule(
    "EOS403",
    Severity.ERROR,
    "transactional id prefix not shared",
    "give each pipeline its own transactional_id_prefix: recovery fences and aborts everything under a prefix",
)
def _prefix_not_shared(facts: PreflightFacts) -> Outcome:
    return _shared(facts, "transactional_id_prefix", lambda s: s.transactional_id_prefix)


@rule(
    "EOS404",
    Severity.ERROR,
    "sink group not shared",
    "give each pipeline its own group_id: the group's markers say which batches of which query are in Kafka",
)
def _group_not_shared(facts: PreflightFacts) -> Outcome:
    return _shared(facts, "group_id", lambda s: s.group_id)


@rule(
    "EOS405",
    Severity.ERROR,
    "checkpoint location not shared",
    "give each pipeline its own checkpoint_location",
)
def _checkpoint_not_shared(facts: PreflightFacts) -> Outcome:
    return _shared(facts, "checkpoint_location", lambda s: canonical_location(s.checkpoint_location))


@rule(
    "EOS406",
    Severity.ERROR,
    "pipeline name unique",
    "rename one of the pipelines: DAG and task ids derive from the name",
)
def _name_unique(facts: PreflightFacts) -> Outcome:
    if facts.other_specs is None:
        return unknown(facts, "other_specs", "the other pipeline specs were")
    clashes = [other for other in facts.other_specs if other.name == facts.spec.name]
    different = [other for other in clashes if not _same_pipeline(other, facts.spec)]
    if different:
        return failed(
            f"another spec is also named {facts.spec.name!r} but describes a different pipeline "
            f"(group_id {different[0].group_id!r}, checkpoint_location {different[0].checkpoint_location!r})"
        )
    return passed(f"no other pipeline is named {facts.spec.name!r}")


@rule(
    "EOS407",
    Severity.WARNING,
    "the sink group holds only batch markers",
    "check who commits to the sink group: only this pipeline's exactly-once sink may; run `eos verify` before "
    "repairing anything",
)
def _only_markers(facts: PreflightFacts) -> Outcome:
    # An offset without a marker was committed by something else: an at-least-once run, a
    # consumer, a tool. Verification calls it NO_MARKER and refuses to guess.
    if facts.group_offsets is None:
        return unknown(facts, "group_offsets", "the sink group's committed offsets were")
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
        return failed(f"group {facts.spec.group_id!r} has offsets not committed by the sink: {'; '.join(foreign)}")
    if not committed:
        return passed(f"group {facts.spec.group_id!r} has no committed offsets on the input partitions")
    return passed(f"group {facts.spec.group_id!r}: {len(committed)} committed offset(s), all with batch markers")


@rule(
    "EOS408",
    Severity.ERROR,
    "transactional id prefix not nested in another pipeline's",
    "give the pipelines transactional_id_prefix values where neither '<prefix>-' begins the other (e.g. "
    "'orders-eu-eos' beside 'orders-us-eos', not 'orders' beside 'orders-eu'): each job principal's PREFIXED "
    "ACL on '<prefix>-' would also cover the other pipeline's transactional ids",
)
def _prefix_not_nested(facts: PreflightFacts) -> Outcome:
    # Recovery's own id test is exact (belongs_to_prefix), but Kafka's PREFIXED ACL is not: a
    # principal granted 'orders-' may InitProducerId as 'orders-eu-0' and fence that pipeline.
    others = _others(facts)
    if others is None:
        return unknown(facts, "other_specs", "the other pipeline specs were")
    mine = transactional_id_pattern(facts.spec)
    nested = covered_pipelines(facts.spec, others)
    if nested:
        return failed("; ".join(
            f"pipeline {other.name} has prefix {other.transactional_id_prefix!r}: the PREFIXED ACL "
            f"{mine!r} and its {transactional_id_pattern(other)!r} overlap, so each job principal may use "
            "the other's transactional ids"
            for other in nested
        ))
    return passed(f"the ACL pattern {mine!r} covers no transactional id of the {len(others)} other pipeline(s)")
