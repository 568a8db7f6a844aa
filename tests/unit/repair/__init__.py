"""Tests of :mod:`airflow_provider_eos.core.repair`."""
