"""spark-submit's application: ``eos_job.py --spec FILE [--mode exactly-once|at-least-once]``.

A shell only: the driver program is :func:`airflow_provider_eos.spark.entry_point.main`.
"""

import sys

from airflow_provider_eos.spark.entry_point import main

if __name__ == "__main__":
    sys.exit(main())
