"""Typed errors. Each carries what an operator needs to act: what was found and the fix.

Each type also says whether an Airflow retry of the task can change the outcome
(:attr:`EosError.retryable`): the operators, the health sensor and its trigger read it there, so
no caller keeps its own list.
"""

from __future__ import annotations

from typing import ClassVar


class EosError(Exception):
    """Base of every error this package raises on purpose.

    :param message: what is wrong, naming the values found.
    :param fix: what the operator should do about it.
    """

    #: Whether retrying the task can change the outcome. True by default: a condition nobody
    #: classified (a broker away, a timeout) may pass. False for errors about the task's own
    #: arguments, durable state or permissions, which stay as they are until a person acts.
    retryable: ClassVar[bool] = True

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message}\nFix: {fix}" if fix else message)


class PrerequisiteError(EosError):
    """A tool the project needs (Java, Maven, the Kafka jars) is missing or unusable."""

    retryable = False


class DevstackError(EosError):
    """The local Kafka broker could not be started, reached or stopped."""


class StateFolderBusyError(DevstackError):
    """Another devstack command is changing the same state folder; names it (pid, command, since)."""


class SparkClusterError(DevstackError):
    """The devstack's Spark standalone cluster could not be started or stopped; names the log file to read."""


class YarnClusterError(DevstackError):
    """The devstack's Hadoop MiniCluster (HDFS + YARN) could not be started or stopped; names the log file to read."""


class AirflowDeploymentError(DevstackError):
    """The devstack's Airflow deployment could not be started or stopped; names the log file to read."""


class SettingError(EosError):
    """An ``[eos]`` option (or its ``EOS_*`` variable) holds a value the provider cannot use; names both."""

    retryable = False


class SpecError(EosError):
    """The pipeline spec is invalid; the message names the field."""

    retryable = False


class CheckpointError(EosError):
    """A Spark checkpoint file is missing or malformed; the message names the file."""

    retryable = False


class MarkerError(EosError):
    """A committed offset's metadata is not a batch marker this package can read."""

    retryable = False


class InconsistentOffsetsError(EosError):
    """The sink group's committed offsets disagree with the checkpoint's planned batch."""

    retryable = False


class ExpiredOffsetsError(InconsistentOffsetsError):
    """The group holds nothing where the batch needs "nothing committed", but its offsets may have expired.

    The broker deletes a member-less group's offsets ``offsets.retention.minutes`` after their commit, so
    past that since the batch was planned, the absence no longer proves that no attempt of it committed.
    """


class PlanNotAlignedError(EosError):
    """Executor writers were asked for a plan not partition-aligned with the Kafka source; names the operator."""


class ScanRangeMismatchError(EosError):
    """The batch scan's Kafka offset ranges disagree with the checkpoint's write-ahead log for the batch."""


class PlanReadError(EosError):
    """A micro-batch's executed plan or its Kafka scan could not be read from Spark."""


class RepairError(EosError):
    """A repair was refused or failed; nothing was changed unless the message says so."""

    retryable = False


class UnsafeToActError(EosError):
    """The pipeline looks alive; acting now could abort a healthy transaction."""


class KafkaConfigError(EosError):
    """A Kafka setting of the spec cannot be expressed in a client's dialect; names the key, the client and the fix.

    Raised by :mod:`airflow_provider_eos.kafka.settings` for the Java client under Spark and for
    kafka-python (the spec's ``kafka`` dict is librdkafka's dialect).
    """

    retryable = False


class KafkaLoginError(EosError):
    """The cluster refused the client's login: SASL authentication or the TLS handshake failed; names who and where.

    Raised by :mod:`airflow_provider_eos.kafka.login` within a second or so, where the clients
    would otherwise retry silently until a request times out.
    """


class KafkaUnreachableError(EosError):
    """No broker of ``bootstrap.servers`` answered within the wait: one sentence naming the brokers, the fix.

    Raised by the one reachability probe (:mod:`airflow_provider_eos.kafka.reachability`) that every
    use case runs before its first Kafka request, through
    :class:`~airflow_provider_eos.usecases.clients.PipelineClients`: a cluster that is down fails in
    seconds with these words, whichever command or operator asked, instead of after each client's own
    request timeout with each client's own words. Retryable: the brokers may be back by then.

    :param brokers: the ``bootstrap.servers`` tried.
    :param timeout_s: how long the probe waited.
    :param last_error: what the client last said about its connections (refused, unresolvable host ...).
    """

    def __init__(self, brokers: str, timeout_s: float, *, last_error: str | None = None) -> None:
        self.brokers, self.timeout_s, self.last_error = brokers, timeout_s, last_error
        super().__init__(
            f"no Kafka broker answered at {brokers} within {timeout_s:g} s" + (f": {last_error}" if last_error else ""),
            fix=UNREACHABLE_FIX,
        )


#: The fix of :class:`KafkaUnreachableError`, the same for every command and operator.
UNREACHABLE_FIX = (
    "check that the brokers run and that bootstrap.servers names them (the spec's kafka settings, or the Airflow "
    "kafka connection that replaces them); a cluster slow to answer needs a longer wait: `eos ... --timeout SECONDS`, "
    "or the operators' kafka_connect_timeout_s"
)


class KafkaNoAnswerError(EosError):
    """A broker was connected but gave no answer to a request within its deadline: names the brokers, the call, the fix.

    A broker that accepts connections and never answers (its process paused or stuck, a host that
    swaps) would otherwise hold a kafka-python admin call forever: the client retries the request
    until the broker is back and has no overall deadline. Every such call runs under a deadline
    (:func:`airflow_provider_eos.core.retry.within`) and ends with this error. A confluent-kafka request that
    timed out or lost its connection (verify's reads; :func:`airflow_provider_eos.kafka.retriable.raise_if_unanswered`)
    ends with it too: the same fact, whichever client met it. Retryable: the broker may answer by the next try.

    :param brokers: the ``bootstrap.servers`` the client was connected to.
    :param what: the request that got no answer (``DescribeTransactions``...).
    :param timeout_s: how long it was waited for.
    :param detail: the client's own word on it, when it gave up first (its request timeout).
    """

    #: What the message adds about the request's effect (none: a read changed nothing).
    effect: ClassVar[str] = ""
    #: What to do once the brokers answer again.
    then: ClassVar[str] = "The task's retry runs the call again once they answer"

    def __init__(self, brokers: str, what: str, timeout_s: float, *, detail: str | None = None) -> None:
        self.brokers, self.what, self.timeout_s, self.detail = brokers, what, timeout_s, detail
        super().__init__(
            f"{what}: no answer from the Kafka broker(s) at {brokers} within {timeout_s:g} s ("
            + (detail or "connected, but the broker does not answer") + ")" + self.effect,
            fix=f"{NO_ANSWER_CHECK}. {self.then}",
        )


class KafkaWriteNoAnswerError(KafkaNoAnswerError):
    """A write no broker answered within its deadline: it may have gone through or not, and nobody knows which.

    The broker may have applied the request and lost only its answer (align's OffsetCommit to the sink
    group: :func:`airflow_provider_eos.kafka.group_offset_commit.commit_group_offsets`). Not retryable: a retry
    would act on a state nobody read; the operator reads what Kafka holds (``eos verify``) first.
    """

    retryable = False
    effect = "; the write may have gone through: what the group holds now is unknown"
    then = (
        "Then, before repeating the repair, run `eos verify --spec <spec file>` to read what the group holds: the "
        "write may have gone through, and verify's next step says whether anything is still to do"
    )


#: What to check when a broker gives no answer (:class:`KafkaNoAnswerError`'s fix).
NO_ANSWER_CHECK = (
    "check that the brokers are answering: a broker process paused or stuck (a long GC pause, a stopped JVM, "
    "a host out of memory) accepts connections and answers nothing; its log and `kafka-broker-api-versions.sh "
    "--bootstrap-server HOST:PORT` show it"
)


class AclMissingError(EosError):
    """The broker refused a request for want of an ACL; names the request, the ACL it needs and who grants it.

    Built by :func:`airflow_provider_eos.core.acls.denials.acl_missing` (one mapping of a refusal
    to its ACL) wherever a client is refused: the Spark source, the sink, recovery's and health's
    admin clients.

    :param request: the Kafka request refused (``Fetch``, ``TxnOffsetCommit``...).
    :param resource_type: ``TOPIC``, ``GROUP``, ``TRANSACTIONAL_ID`` or ``CLUSTER``.
    :param resource_names: the resources the request named.
    :param operation: the ACL operation Kafka checks for that request on that resource type.
    :param principal: ``User:NAME`` refused, when the client's settings name it.
    :param role: the role whose task was refused, once known (the fix then grants its whole set).
    """

    retryable = False  # no retry grants an ACL: a person does

    def __init__(  # noqa: PLR0913  # the fields of the refused request, each keyword-only
        self,
        message: str,
        *,
        fix: str | None = None,
        request: str = "",
        resource_type: str = "",
        resource_names: tuple[str, ...] = (),
        operation: str = "",
        principal: str | None = None,
        role: str | None = None,
    ) -> None:
        super().__init__(message, fix=fix)
        self.request, self.resource_type, self.resource_names = request, resource_type, resource_names
        self.operation, self.principal, self.role = operation, principal, role


class RetryExhaustedError(EosError):
    """A retry policy gave up (:mod:`airflow_provider_eos.core.retry`); the last error is the cause.

    :param what: the operation that was retried.
    :param attempts: how many attempts were made.
    :param elapsed_s: seconds from the first attempt to giving up.
    :param last_error: the last attempt's error.
    """

    def __init__(
        self,
        message: str,
        *,
        what: str,
        attempts: int,
        elapsed_s: float,
        last_error: BaseException | None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, fix=fix)
        self.what, self.attempts, self.elapsed_s, self.last_error = what, attempts, elapsed_s, last_error


class SinkError(EosError):
    """A batch could not be written; its transaction was aborted (or fenced) and Spark will replay it."""


class ProducerFencedError(SinkError):
    """Another writer with the same transactional id started: this producer is a zombie."""


class TransactionAbortedError(SinkError):
    """The transaction failed in a way that aborts it; the replay writes the batch once."""


class TransactionTimedOutError(SinkError):
    """The batch outlived ``transaction.timeout.ms`` or a delivery timed out; the broker aborted it."""


class SinkAuthorizationError(SinkError, AclMissingError):
    """The broker refused the sink's principal an operation; the message names the missing ACL."""

    retryable = False  # an ACL missing, whatever SinkError may say one day


class UnknownProducerIdError(SinkError):
    """The broker no longer knows the producer id (its state expired); the producer is recreated."""


class SinkKafkaError(SinkError):
    """Any other Kafka error of the sink; the message carries the broker's code and text."""


class SubmissionError(EosError):
    """spark-submit cannot be planned from what was given (a connector jar, a packed environment); names the value."""

    retryable = False


class JobEnvironmentError(EosError):
    """The job's packed Python environment (``eos package``) could not be built; names the step, its log and the fix."""


class DriverLeaseError(EosError):
    """The driver could not take or renew its lease in the checkpoint, so it commits nothing more (it fenced itself)."""


class DriverLeaseHeldError(DriverLeaseError):
    """Another driver holds the pipeline's lease and has not been seen to end: this one does not start beside it.

    Two drivers of one pipeline fence each other's transactions (the same transactional ids) and run
    two queries on one checkpoint. Names the holder (token, host, pid, application) and when its
    lease expires. Retryable: the holder may stop, or its lease expire, before the next try.
    """


class MetricsExporterError(EosError):
    """The driver cannot serve its metrics (``metrics.prometheus_port`` in use or not bindable)."""

    retryable = False
