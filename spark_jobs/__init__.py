"""The Spark side's shell: spark-submit's entry script (``eos_job.py``) and the example transforms.

Shipped in the airflow-provider-eos distribution beside ``airflow_provider_eos`` and, with it, to
the driver and executors (``--py-files``, or the packed environment of ``eos package``). The job's
logic lives in :mod:`airflow_provider_eos.spark`; a spec names a transform here as
``spark_jobs.transforms.<name>:transform``.
"""
