"""The documentation site builds with ``mkdocs build --strict``: a broken link, anchor or missing page fails.

CI runs ``make test``, so this is where the docs' links are checked. The build takes about a second.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "tools" / "mkdocs_repository_links.py"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # MkDocs logs to stderr; NO_MKDOCS_2_WARNING silences the theme's end-of-life banner, not a check.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_the_site_builds_strict_without_a_warning(mkdocs_installed: None, tmp_path: Path) -> None:
    result = _build(REPO / "mkdocs.yml", tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{log}"
    assert "WARNING" not in log, log
    # The repository files the pages link to (bench and soak results) are published with the site.
    assert (tmp_path / "site" / "repository" / "bench" / "results" / "LATEST" / "index.html").is_file()
    assert (tmp_path / "site" / "pipeline-spec.schema.json").is_file()


@pytest.mark.parametrize(
    ("link", "named"),
    [
        ("[gone](no-such-page.md)", "no-such-page.md"),
        ("[gone](runbook.md#no-such-heading)", "no-such-heading"),
        ("[gone](../bench/results/NO-SUCH-FILE.md)", "NO-SUCH-FILE.md"),
    ],
    ids=["page", "anchor", "repository-file"],
)
def test_a_broken_link_fails_the_build(mkdocs_installed: None, tmp_path: Path, link: str, named: str) -> None:
    """The check itself: a copy of the docs with one broken link does not build, and the log names the link."""
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "docs", repo / "docs")
    for results in ("bench/results", "soak/results"):  # the pages link to their Markdown reports
        shutil.copytree(REPO / results, repo / results, ignore=shutil.ignore_patterns("*.json", "*.png"))
    (repo / "docs" / "index.md").write_text((repo / "docs" / "index.md").read_text() + f"\n{link}\n")
    config = (REPO / "mkdocs.yml").read_text().replace("tools/mkdocs_repository_links.py", str(HOOK))
    (repo / "mkdocs.yml").write_text(config)
    result = _build(repo / "mkdocs.yml", tmp_path / "site")
    log = result.stdout + result.stderr
    assert result.returncode != 0, f"the build passed with {link}:\n{log}"
    assert named in log, log
