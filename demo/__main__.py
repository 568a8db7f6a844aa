"""``python -m demo``: the embedded default end to end (see :mod:`demo.run`)."""

import sys

from demo.run import run_demo

sys.exit(run_demo())
