"""Airflow triggers: the asynchronous half of the sensors, polling in the triggerer."""
