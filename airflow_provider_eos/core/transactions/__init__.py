"""Open transactions after a failure: which are lingering, which are hanging, and whether to act.

Two kinds of open transaction pin the last stable offset (LSO) of the pipeline's output and
stall every ``read_committed`` consumer (docs/architecture.md, recovery):

*Lingering* (:mod:`.lingering`)
    A transaction under the pipeline's prefix that its coordinator still lists as ongoing;
    recovery aborts it by fencing (``init_transactions`` with the same id).
*Hanging* (:mod:`.hanging`)
    An open transaction on a partition that no coordinator will ever finish; only the admin
    AbortTransaction clears it. Found exactly as ``kafka-transactions.sh find-hanging`` does.

Safety rules, enforced here so every caller (CLI, Airflow operator) gets them:

* Nothing outside the prefix is ever touched: an id is acted on only if
  :func:`~airflow_provider_eos.core.transactional_ids.belongs_to_prefix` says so. A hanging
  transaction whose producer the coordinator attributes to another transactional id is
  reported and left alone (:mod:`.abort_plan`).
* Acting while the job looks alive is refused unless forced (:mod:`.safety`).

The package is pure: the Kafka I/O lives in :mod:`airflow_provider_eos.kafka.transactions_admin`.
:mod:`.admin_reports` holds what the admin API reports, :mod:`.abort_report` what ``eos abort`` shows.
"""

from __future__ import annotations

from airflow_provider_eos.core.transactions.abort_plan import AbortRow, Action, Outcome, plan_abort
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.transactions.admin_reports import (
    PartitionOffsets,
    ProducerState,
    Transaction,
    TransactionListing,
    TxnState,
    format_age,
    to_epoch_ms,
)
from airflow_provider_eos.core.transactions.hanging import (
    HangingReason,
    HangingTransaction,
    OpenPartitionTransaction,
    find_hanging,
    hanging_candidates,
)
from airflow_provider_eos.core.transactions.lingering import LingeringTransaction, find_lingering, open_under_prefix
from airflow_provider_eos.core.transactions.safety import (
    LivenessSigns,
    SafetyCheck,
    check_safe_to_act,
    default_quiet_period_ms,
    evaluate_safety,
    recent_commit_reason,
    young_transaction_reasons,
)

__all__ = [
    "AbortReport",
    "AbortRow",
    "Action",
    "HangingReason",
    "HangingTransaction",
    "LingeringTransaction",
    "LivenessSigns",
    "OpenPartitionTransaction",
    "Outcome",
    "PartitionOffsets",
    "ProducerState",
    "SafetyCheck",
    "Transaction",
    "TransactionListing",
    "TxnState",
    "check_safe_to_act",
    "default_quiet_period_ms",
    "evaluate_safety",
    "find_hanging",
    "find_lingering",
    "format_age",
    "hanging_candidates",
    "open_under_prefix",
    "plan_abort",
    "recent_commit_reason",
    "to_epoch_ms",
    "young_transaction_reasons",
]
