"""``python -m soak`` (``make soak``): a long fault-injection soak of the exactly-once pipeline.

At least a million input records per phase through both writers (driver, executors) on a three-broker
cluster and a Spark standalone cluster, under a seeded schedule of faults of nine kinds (driver,
Python worker, executor and broker kills, broker restarts and pauses, transactions outliving their
timeout), then the same schedule on the at-least-once writer as a control. The executors phase runs
the JVM executor writer unless ``--executor-writer python``. See :mod:`soak.run` and :mod:`soak.schedule`.
"""
