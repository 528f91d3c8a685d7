"""The README and docs/ say what the code does: every setting is documented (and the generated page is current), every
relative link and anchor resolves, and the tool counts and tool table match the tools the server lists."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import fields
from pathlib import Path

import pytest

from mcp_offload.cli import settings_doc
from mcp_offload.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION = ROOT / "docs" / "configuration.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LISTED_TOOLS = [t["name"] for t in json.loads((ROOT / "tests" / "data" / "tools_list.json").read_text())]
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
FIX = "run: python -m mcp_offload.cli.settings_doc --write docs/configuration.md"


def test_every_setting_is_in_the_configuration_page() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    missing = [f.name for f in fields(Settings) if f"| `{f.name}` | `MCP_OFFLOAD_{f.name.upper()}` |" not in page]
    assert not missing, f"docs/configuration.md lacks the settings {missing}; {FIX}"


def test_the_configuration_page_is_what_the_generator_writes() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    assert settings_doc.rewrite(page) == page, f"docs/configuration.md is stale; {FIX}"


def test_the_generator_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    stale = tmp_path / "configuration.md"
    page = CONFIGURATION.read_text(encoding="utf-8")
    stale.write_text(page.replace("| `encoding` |", "| `encodings` |"), encoding="utf-8")
    assert settings_doc.main(["--check", str(stale)]) == 1
    assert settings_doc.main(["--write", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == page
    (tmp_path / "bare.md").write_text("# no markers\n", encoding="utf-8")
    assert settings_doc.main(["--check", str(tmp_path / "bare.md")]) == 2


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces become hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return kept.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        missing_anchor = target.exists() and bool(anchor) and target.suffix == ".md" and anchor not in _anchors(target)
        if not target.exists() or missing_anchor:
            broken.append(link)
    assert not broken, f"{page.name}: broken links {broken}"


def test_the_readme_tool_table_lists_the_servers_tools() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The five tools", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)\(", section, re.M)
    assert rows == LISTED_TOOLS


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_tool_counts_agree_with_the_listed_tools(page: Path) -> None:
    """'five tools' = all the server lists; 'four retrieval tools' = all but `offload` (issue 27: a page said three)."""
    text = page.read_text(encoding="utf-8").lower()
    for word, kind in re.findall(r"\b(two|three|four|five|six|seven) (retrieval )?tools\b", text):
        expected = len(LISTED_TOOLS) - 1 if kind else len(LISTED_TOOLS)
        assert NUMBERS[word] == expected, f"{page.name} says '{word} {kind}tools'; the server lists {LISTED_TOOLS}"
