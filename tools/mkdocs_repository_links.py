"""MkDocs hook: links from docs/ to files elsewhere in the repository work on the site and are checked.

A page links to a repository file the way it reads on a code host, relative to the page
(``[LATEST](../bench/results/LATEST.md)``). MkDocs knows only ``docs/``: on its own it would
warn "not found" for every such link, so ``--strict`` could not tell a broken link from a good
one. This hook publishes each linked file under ``repository/<path>`` on the site (a Markdown
file as a page, anything else as it is), rewrites the link to it, and fails the strict build
with the page and the link when the file does not exist. Links that stay inside ``docs/`` are
MkDocs's own business and are checked by it.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.repository_links")

#: Where the linked repository files appear on the site.
SITE_FOLDER = "repository"
# An inline link or image target: ](target) or ](target "title"); reference-style links are not used here.
_LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?(?P<title>\s+\"[^\"]*\")?\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def _repository_root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def _outside_target(page_uri: str, target: str, config: MkDocsConfig) -> Path | None:
    """The repository file a link from ``page_uri`` points to when it leaves ``docs/``; else ``None``."""
    if _SCHEME.match(target) or target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(page_uri), target))
    if not joined.startswith("../"):
        return None
    resolved = (Path(config.docs_dir) / posixpath.dirname(page_uri) / target).resolve()
    root = _repository_root(config)
    return resolved if resolved.is_relative_to(root) else None


def _site_uri(path: Path, config: MkDocsConfig) -> str:
    return f"{SITE_FOLDER}/{path.relative_to(_repository_root(config)).as_posix()}"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add every repository file a page links to, once; a missing one fails the strict build."""
    for page_file in list(files.documentation_pages()):
        text = Path(page_file.abs_src_path or "").read_text(encoding="utf-8")
        for match in _LINK.finditer(text):
            target = _outside_target(page_file.src_uri, match["target"], config)
            if target is None:
                continue
            if not target.is_file():
                log.warning("%s links to %r: no such file in the repository", page_file.src_uri, match["target"])
                continue
            uri = _site_uri(target, config)
            if files.get_file_from_path(uri) is None:
                # Reached through the page's link, never from the navigation (nor warned about as missing from it).
                files.append(File.generated(config, uri, abs_src_path=str(target), inclusion=InclusionLevel.NOT_IN_NAV))
    return files


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Point each link to a repository file at its copy on the site."""

    def rewrite(match: re.Match[str]) -> str:
        target = _outside_target(page.file.src_uri, match["target"], config)
        if target is None or not target.is_file():
            return match[0]
        here = posixpath.dirname(page.file.src_uri) or "."
        link = posixpath.relpath(_site_uri(target, config), here)
        return f"]({link}{match['anchor'] or ''}{match['title'] or ''})"

    return _LINK.sub(rewrite, markdown)
