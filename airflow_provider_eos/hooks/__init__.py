"""Airflow hooks: credentials from Airflow connections, turned into what the core needs."""
