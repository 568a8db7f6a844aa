"""A stand-in spark-submit that records the names of the environment it was started with.

It writes them (never the values) beside the spec named by ``--spec``, as JSON, and exits 0: the
real launchers (the operator's hook, ``eos run``) start it exactly as they start spark-submit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

_SCRIPT = """#!{python}
import json, os, sys
spec = sys.argv[sys.argv.index("--spec") + 1]
with open(spec + ".env.json", "w") as out:
    json.dump(sorted(os.environ), out)
"""


def fake_spark_submit(folder: Path) -> Path:
    """Write the stand-in into ``folder`` and return its path (executable)."""
    script = folder / "spark-submit"
    script.write_text(_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return script


def names_seen(spec_file: Path) -> set[str]:
    """The environment variable names the stand-in was started with, for the spec it was given."""
    return set(json.loads(Path(f"{spec_file}.env.json").read_text()))
