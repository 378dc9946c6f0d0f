"""The documentation site builds without a warning, and the README stays a short, linked entry.

``mkdocs build --strict`` turns every warning into a failure: a link to a missing page or
anchor, a page left out of the nav, a snippet file that is not there (pymdownx.snippets with
``check_paths``), a docstring mkdocstrings cannot render.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_LINES = 300
# [text](target) links, and <a href="target"> ones, of Markdown.
LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")


def relative_links(markdown: str) -> list[str]:
    """The link targets in *markdown* that are paths in this repository (no scheme, no
    in-page anchor), without their ``#anchor``."""
    targets = [a or b for a, b in LINK.findall(markdown)]
    return [
        t.split("#", 1)[0]
        for t in targets
        if "://" not in t and not t.startswith(("#", "mailto:"))
    ]


def test_mkdocs_builds_the_site_with_no_warning(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "feeding" / "index.html").is_file()
    reference = (tmp_path / "site" / "reference" / "cluster" / "index.html").read_text()
    assert 'id="tfrecord_io.cluster.run"' in reference  # rendered from the docstrings


def test_every_page_under_docs_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text()
    in_nav = set(re.findall(r"^\s*- .*?([\w/.-]+\.md)\s*$", config, re.MULTILINE))
    pages = {
        str(p.relative_to(ROOT / "docs"))
        for p in (ROOT / "docs").rglob("*.md")
        if "snippets" not in p.parts
    }
    assert pages - in_nav == set(), "pages missing from the nav of mkdocs.yml"
    assert in_nav - pages == set(), "nav entries without a page"


def test_readme_is_short():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_every_relative_link_in_the_readme_resolves_to_a_file():
    targets = relative_links(README.read_text())
    assert targets, "the README links to no page"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


def test_the_readme_keeps_the_two_commands_ci_runs():
    text = README.read_text()
    assert "make setup" in text and "make test" in text


def test_the_home_page_links_every_page_of_the_nav():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {p for p in re.findall(r"^\s*- .*?([\w/.-]+\.md)\s*$", config, re.MULTILINE)
             if not p.startswith("reference/") and p != "index.md"}
    linked = set(re.findall(r"\]\(([\w/.-]+\.md)\)", (ROOT / "docs" / "index.md").read_text(
        encoding="utf-8")))
    assert pages - linked == set(), "pages of the nav that docs/index.md does not name"
