"""Airflow plugins of this provider (``airflow.plugins`` entry points in setup.cfg)."""
