"""Airflow sensors: check once, then defer to a trigger; results become task outcomes and XComs."""
