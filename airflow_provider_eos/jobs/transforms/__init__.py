"""Example transforms: ``airflow_provider_eos.jobs.transforms.<name>:transform``."""
