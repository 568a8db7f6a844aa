"""The domain of exactly-once pipelines, importable with neither Airflow nor PySpark."""
