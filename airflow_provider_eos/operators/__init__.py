"""Airflow operators: thin adapters that turn core results into task outcomes, logs and XComs."""
