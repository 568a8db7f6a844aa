"""Kafka I/O through confluent-kafka, shared by the Spark job and the Airflow tasks (imports neither)."""
