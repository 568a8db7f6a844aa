"""Example transforms: ``spark_jobs.transforms.<name>:transform``."""
