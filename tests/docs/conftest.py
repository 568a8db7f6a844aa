"""The docs tests need MkDocs, which ``make install`` installs (the ``docs`` extra): without it they fail, not skip."""

from __future__ import annotations

import importlib.util

import pytest


@pytest.fixture(scope="session")
def mkdocs_installed() -> None:
    """Fail with what to install when MkDocs or its theme is missing."""
    missing = [name for name in ("mkdocs", "material") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not installed: the docs are built by the `docs` extra's MkDocs; run "
            "`make install` (EXTRAS includes docs) or `pip install -e '.[docs]' -c constraints-3.11.txt`",
            pytrace=False,
        )
