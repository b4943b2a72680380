"""The README links every operator page; the pages link only inside the repository and
name no host but loopback and placeholders (HOST, KEYSTONE)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).parents[2]
OPERATOR_PAGES = ["install", "configuration", "permissions", "troubleshooting", "upgrading"]


def test_the_readme_links_every_operator_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Operating l3ha\n", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"\]\((docs/[\w.-]+\.md)\)", section)
    assert linked == [f"docs/{name}.md" for name in OPERATOR_PAGES]


def test_every_link_of_the_pages_stays_in_the_repository() -> None:
    for name in OPERATOR_PAGES:
        page = REPO / "docs" / f"{name}.md"
        text = page.read_text(encoding="utf-8")
        for host in re.findall(r"https?://([^/:\s`?)]+)", text):
            assert host == "127.0.0.1" or re.fullmatch(r"[A-Z][A-Z0-9_]*", host), (name, host)
        for target in re.findall(r"\]\(([^)]+)\)", text):
            assert (page.parent / target).exists(), f"{name}.md links to missing {target}"
