"""The use cases, once each, between the I/O (``kafka/``, the checkpoint reader) and the shells.

Each of pre-flight, health, verify, abort, rewind and align is one function over a
:class:`~airflow_provider_eos.usecases.clients.PipelineClients` (the spec, the Kafka admin
client, the checkpoint reader with the storage options) that returns a typed
:class:`~airflow_provider_eos.usecases.result.UseCaseResult`: the outcome, the core's report,
a one-line summary and the next step. The ``eos`` CLI and the Airflow operators call the same
function and differ only in presentation:

====================  ===========  ====================================================
outcome               ``eos``      operator
====================  ===========  ====================================================
``ok``                exit 0       succeeds, returns :meth:`~UseCaseResult.data` (XCom)
``finding``           exit 1       pushes the data, fails with ``AirflowFailException``
error (``EosError``)  exit 2       fails: ``AirflowFailException`` when a retry cannot
                                   help (spec, checkpoint, refused repair), else
                                   ``AirflowException`` (retried as configured)
====================  ===========  ====================================================

Decisions where the two shells used to differ:

- **verify, missing checkpoint**: "nothing committed yet", not an error: a pipeline's first
  run must pass. Unless the group holds markers: they then name a query the missing
  checkpoint does not have, and verification says ``DIVERGED`` (a finding). Rewind and align
  still refuse a missing checkpoint (``CheckpointError``): there is nothing to repair.
- **align**: always followed by a verification read back from Kafka; after an executed commit a
  verdict that still disagrees is a finding (exit 1 / task failure), forced or not. A dry run
  or a no-op is ``ok`` (the plan is the result).
- **abort**: the liveness check reads the checkpoint's newest commit with the storage options
  of the shell (the CLI: ambient credentials; an operator: its checkpoint connection), through
  the same :class:`PipelineClients`. Anything left open, or found by a dry run, is a finding.
- **rewind**: ``ok`` once it ran (dry run, no-op or executed); without a batch it takes the one
  a ``KAFKA_BEHIND`` verdict names and refuses (``RepairError``) for any other verdict.
- **rewind and align, executed**: the same liveness gate as the abort (:mod:`.liveness`) before
  anything moves or is committed, ``UnsafeToActError`` unless forced; given the fingerprint of
  the dry run the person read (``expected_plan``), any other plan is a ``RepairError``.
- **abort, rewind and align**: dry runs unless ``execute=True`` (``--execute``, ``dry_run=False``); the
  DAGs state their choice on every such task.
- **Kafka down**: every use case asks :meth:`PipelineClients.require_kafka` before its first Kafka
  request; no answer within ``connect_timeout_s`` (``--timeout``, the operators'
  ``kafka_connect_timeout_s``) is one ``KafkaUnreachableError`` naming the brokers, retryable.
- **pre-flight**: a failed ERROR rule is a finding; warnings and "not checked" are not.
- **health**: UNHEALTHY is a finding; DEGRADED too when strict.

The modules import Kafka clients; the shells import them only when a command runs.
"""
