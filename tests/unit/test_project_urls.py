"""setup.cfg's project URLs point into this repository, on the one host it names, at paths that exist.

The repository is not published yet, so no link can be fetched; what can be checked is that every
link is the source URL or a path under it, and that each path it names (the documentation's home
page, the changelog) is in the repository, so a renamed file breaks this test, not the wheel's links.
"""

from __future__ import annotations

import configparser
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]


def _urls() -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    pairs = (line.split("=", 1) for line in cfg["metadata"]["project_urls"].splitlines() if line.strip())
    return {name.strip(): url.strip() for name, url in pairs}


def test_every_url_is_the_repository_or_a_path_in_it() -> None:
    urls = _urls()
    assert set(urls) == {"Documentation", "Source Code", "Bug Tracker", "Changelog"}
    source = urls["Source Code"]
    assert urlsplit(source).scheme == "https" and not urlsplit(source).fragment
    for name, url in urls.items():
        assert url == source or url.startswith(source + "/"), f"{name} leaves the repository: {url}"
    assert urls["Bug Tracker"] == f"{source}/issues"


def test_the_documentation_and_changelog_links_name_files_of_this_repository() -> None:
    urls = _urls()
    prefix = urls["Source Code"] + "/blob/main/"
    for name, expected in (("Documentation", "docs/index.md"), ("Changelog", "CHANGELOG.md")):
        assert urls[name] == prefix + expected, f"{name}: {urls[name]}"
        assert (REPO / expected).is_file(), expected
    # docs/index.md is the home page of the site `make docs` builds (mkdocs.yml's docs_dir and nav).
    mkdocs = (REPO / "mkdocs.yml").read_text()
    assert "docs_dir: docs" in mkdocs and "Home: index.md" in mkdocs
