"""The Spark side: source, transform plug-in, exactly-once sink, job runner. Imports PySpark, never Airflow."""
