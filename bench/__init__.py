"""Benchmarks of airflow-provider-eos: ``python -m bench`` (``make bench``); not part of CI.

Everything runs in one process tree against one broker the bench starts itself (and always
stops): throughput of the raw transactional producer vs the job in at-least-once and
exactly-once mode, end-to-end latency, recovery after a SIGKILL, the Airflow-side work at scale,
and the driver's memory. Results go to ``bench/results/``.
"""
