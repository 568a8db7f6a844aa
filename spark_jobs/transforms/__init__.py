"""Example transforms: ``spark_jobs.transforms.<name>:transform`` in a spec (``json_enrich``, ``fraud_alerts``)."""
