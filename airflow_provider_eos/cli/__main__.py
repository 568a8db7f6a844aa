"""``python -m airflow_provider_eos.cli``: the same as the ``eos`` script."""

from __future__ import annotations

import sys

from airflow_provider_eos.cli.main import main

sys.exit(main())
