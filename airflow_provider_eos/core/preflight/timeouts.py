"""EOS1xx: the timeout chain.

Trigger interval and batch budget < producer ``transaction.timeout.ms`` <= broker
``transaction.max.timeout.ms``; ``message.timeout.ms`` <= ``transaction.timeout.ms``;
``transactional.id.expiration.ms`` and the sink group's ``offsets.retention.minutes`` longer than
the longest expected pause.
"""

from __future__ import annotations

from collections.abc import Callable

from airflow_provider_eos.core.preflight.facts import PreflightFacts
from airflow_provider_eos.core.preflight.readings import broker_setting, format_ms
from airflow_provider_eos.core.preflight.rule import Outcome, Severity, failed, not_checked, passed, rule, unknown

__all__ = ["HEADROOM_FRACTION"]

#: Share of ``transaction.timeout.ms`` a batch should leave unused (EOS103): producing, the
#: offset commit and the commit round trip happen after the batch's own work.
HEADROOM_FRACTION = 0.2


@rule(
    "EOS101",
    Severity.ERROR,
    "trigger interval < transaction.timeout.ms",
    "lower the spec's trigger interval below transaction_timeout_ms, or raise transaction_timeout_ms "
    "(up to the brokers' transaction.max.timeout.ms)",
)
def _trigger_below_timeout(facts: PreflightFacts) -> Outcome:
    # Under load batches run back to back, each taking about its interval, and the sink's
    # transaction spans the batch: an interval at the timeout plans for aborted transactions.
    spec = facts.spec
    interval = spec.trigger_interval_ms
    if interval is None:
        return passed(f"trigger is {spec.trigger!r}: no interval to compare")
    timeout = spec.transaction_timeout_ms
    if interval >= timeout:
        return failed(
            f"trigger {spec.trigger!r} = {format_ms(interval)} is not below transaction_timeout_ms "
            f"{format_ms(timeout)}: a batch that fills its interval outlives its transaction, which the broker "
            "then aborts"
        )
    return passed(f"trigger {format_ms(interval)} < transaction_timeout_ms {format_ms(timeout)}")


@rule(
    "EOS102",
    Severity.ERROR,
    "batch budget < transaction.timeout.ms",
    "raise transaction_timeout_ms above batch_budget_ms (up to the brokers' transaction.max.timeout.ms), "
    "or lower max_offsets_per_trigger so batches finish sooner and lower batch_budget_ms",
)
def _budget_below_timeout(facts: PreflightFacts) -> Outcome:
    spec = facts.spec
    if spec.batch_budget_ms is None:
        return not_checked(
            "not checked: the spec sets no batch_budget_ms (the longest batch you expect); set it to have "
            "it compared with transaction_timeout_ms",
        )
    if spec.batch_budget_ms >= spec.transaction_timeout_ms:
        return failed(
            f"batch_budget_ms {format_ms(spec.batch_budget_ms)} is not below transaction_timeout_ms "
            f"{format_ms(spec.transaction_timeout_ms)}: a batch within budget can still have its transaction aborted"
        )
    return passed(
        f"batch_budget_ms {format_ms(spec.batch_budget_ms)} < transaction_timeout_ms "
        f"{format_ms(spec.transaction_timeout_ms)}"
    )


@rule(
    "EOS103",
    Severity.WARNING,
    f"{int(HEADROOM_FRACTION * 100)}% headroom below transaction.timeout.ms",
    f"keep the trigger interval and batch_budget_ms at most {int((1 - HEADROOM_FRACTION) * 100)}% of "
    "transaction_timeout_ms: raise the timeout or shorten batches",
)
def _headroom(facts: PreflightFacts) -> Outcome:
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
        return not_checked(
            f"not checked: trigger is {spec.trigger!r} and no batch_budget_ms is set, so no batch duration is known",
        )
    over = {name: value for name, value in durations.items() if value > limit}
    if over:
        listed = ", ".join(f"{name} {format_ms(value)}" for name, value in over.items())
        return failed(
            f"{listed} above {format_ms(limit)} ({int((1 - HEADROOM_FRACTION) * 100)}% of transaction_timeout_ms "
            f"{format_ms(spec.transaction_timeout_ms)})"
        )
    listed = ", ".join(f"{name} {format_ms(value)}" for name, value in durations.items())
    return passed(f"{listed} within {format_ms(limit)}")


@rule(
    "EOS104",
    Severity.ERROR,
    "transaction.timeout.ms <= broker transaction.max.timeout.ms",
    "lower the spec's transaction_timeout_ms to the brokers' transaction.max.timeout.ms or below, or raise "
    "transaction.max.timeout.ms on every broker",
)
def _timeout_within_broker_max(facts: PreflightFacts) -> Outcome:
    found = broker_setting(facts, "transaction.max.timeout.ms", min)
    if found is None:
        return unknown(facts, "broker_configs", "the brokers' configs were")
    maximum, who = found
    timeout = facts.spec.transaction_timeout_ms
    if timeout > maximum:
        return failed(
            f"transaction_timeout_ms {format_ms(timeout)} > transaction.max.timeout.ms {format_ms(maximum)} of "
            f"{who}: the coordinator refuses InitProducerId (INVALID_TRANSACTION_TIMEOUT) and the sink cannot start",
            fix=f"set transaction_timeout_ms to {maximum} or less, or raise transaction.max.timeout.ms on every "
            f"broker to {timeout} or more",
        )
    return passed(
        f"transaction_timeout_ms {format_ms(timeout)} <= transaction.max.timeout.ms {format_ms(maximum)} of {who}"
    )


@rule(
    "EOS105",
    Severity.ERROR,
    "message.timeout.ms <= transaction.timeout.ms",
    "lower the producer's message.timeout.ms to transaction_timeout_ms or below",
)
def _message_timeout(facts: PreflightFacts) -> Outcome:
    # A send that may retry past the transaction timeout fails only after the broker has
    # aborted the transaction under it; the batch must fail first, while it can still retry.
    config = facts.producer_config
    if config is None:
        return unknown(facts, "producer_config", "the sink producer's config was")
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
        return failed(f"sink producer {key} {format_ms(value)} > transaction.timeout.ms {format_ms(timeout)}{note}")
    return passed(f"sink producer {key} {format_ms(value)} <= transaction.timeout.ms {format_ms(timeout)}{note}")


@rule(
    "EOS106",
    Severity.WARNING,
    "spec kafka settings reach the sink producer",
    "remove the listed keys from the spec's kafka dict (the sink sets them itself) or set the spec field "
    "that controls them (transaction_timeout_ms)",
)
def _overridden_producer_settings(facts: PreflightFacts) -> Outcome:
    # A key in the spec that the sink silently replaces misleads whoever reads the spec.
    config = facts.producer_config
    if config is None:
        return unknown(facts, "producer_config", "the sink producer's config was")

    def text(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    replaced = [
        f"kafka[{key!r}]={text(value)!r} becomes {text(config[key])!r}"
        for key, value in facts.spec.kafka.items()
        if key in config and text(config[key]) != text(value)
    ]
    if replaced:
        return failed("the sink producer overrides " + "; ".join(replaced))
    return passed("every kafka setting of the spec reaches the sink producer unchanged")


@rule(
    "EOS107",
    Severity.WARNING,
    "transactional.id.expiration.ms > longest expected pause",
    "raise transactional.id.expiration.ms on the brokers above the longest pause you expect, or plan shorter pauses",
)
def _txn_id_expiration(facts: PreflightFacts) -> Outcome:
    # After a pause longer than this the coordinator forgets the ids, their producer epochs and
    # any transaction it had not finished: recovery can no longer list, fence or reason about
    # what the stopped job left behind.
    return _outlasts_longest_pause(
        facts, "transactional.id.expiration.ms", unit_ms=1,
        effect="the prefix's transactional ids expire while the pipeline is stopped",
    )


@rule(
    "EOS108",
    Severity.WARNING,
    "offsets.retention.minutes > longest expected pause",
    "raise offsets.retention.minutes on every broker above the longest pause you expect (the pre-flight's "
    "longest_expected_pause_ms, 3 days unless set), or plan shorter pauses; after a longer pause run "
    "`eos verify --spec FILE` before starting and follow its next step (if it names a batch in flight whose "
    "offsets may have expired, look in the output topic and tell `eos repair align --spec FILE --in-flight-batch` "
    "written or not-written)",
)
def _offsets_retention(facts: PreflightFacts) -> Outcome:
    # The sink group never has members, so the broker deletes its committed offsets, and the batch
    # markers they carry, this long after their last commit: after a longer pause the group holds
    # nothing, the checkpoint's next batch finds no marker (EOS308, verify's NO_MARKER), and a batch
    # in flight that the stop left written cannot be told from one never written: the sink refuses
    # it (ExpiredOffsetsError, docs/design-notes.md note 55), and align does, until the operator has looked
    # and said which (note 61).
    return _outlasts_longest_pause(
        facts, "offsets.retention.minutes", unit_ms=60_000,
        effect="the sink group has no members, so the broker deletes its committed offsets and batch markers that "
        "long after the last batch, and a longer pause leaves the pipeline unable to resume (no marker for the "
        "checkpoint's last batch)",
        fix=lambda retention, pause: (
            f"set offsets.retention.minutes to more than {pause // 60_000} on every broker, or plan pauses shorter "
            f"than {format_ms(retention)} (and pass that as longest_expected_pause_ms); after a longer pause run "
            "`eos verify --spec FILE` before starting and follow its next step (if it names a batch in flight whose "
            "offsets may have expired, look in the output topic and tell `eos repair align --spec FILE "
            "--in-flight-batch` written or not-written)"
        ),
    )


def _outlasts_longest_pause(facts: PreflightFacts, key: str, *, unit_ms: int, effect: str,
                            fix: Callable[[int, int], str] | None = None) -> Outcome:
    """The lowest ``key`` over the brokers (counted in ``unit_ms``) against the longest expected pause.

    :param effect: what a pause at least that long does, quoted in the failure.
    :param fix: the failure's fix from the setting's and the pause's milliseconds (default: the rule's).
    """
    found = broker_setting(facts, key, min)
    if found is None:
        return unknown(facts, "broker_configs", "the brokers' configs were")
    value, who = found
    duration = value * unit_ms
    shown = format_ms(duration) if unit_ms == 1 else f"{value} ({format_ms(duration)})"
    pause = facts.longest_expected_pause_ms
    if duration <= pause:
        return failed(f"{key} {shown} of {who} is not above the longest expected pause {format_ms(pause)}: {effect}",
                      fix=fix(duration, pause) if fix else None)
    return passed(f"{key} {shown} of {who} > longest expected pause {format_ms(pause)}")
