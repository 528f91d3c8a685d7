"""Ready retrieval calls a preview names: a line range to read or a pattern to search, as the model would write them.

Previews of text kinds (logs, tables, code, diffs, HTML, Markdown) name the calls that answer the usual next
question: `read_large_output(start_line=120, end_line=160)`, `search_large_output(pattern="\\bERROR\\b")`, and for
a table with a header, SQL over it as table t: `query_large_output(query="SELECT ... FROM t GROUP BY 1")`. Each one
is kept as data too (`as_data`), so the tests run every call a preview shows through the real retrieval API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["RetrievalCall", "read_lines", "regex_escape", "search_pattern", "sql_query"]

_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")


@dataclass(frozen=True, slots=True)
class RetrievalCall:
    tool: Literal["read_large_output", "search_large_output", "query_large_output"]
    args: tuple[tuple[str, int | str | bool], ...]

    def render(self) -> str:
        """`read_large_output(start_line=3, end_line=9)`; values as JSON, as a tool call's arguments are."""
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.args)
        return f"{self.tool}({shown})"

    def as_data(self) -> dict[str, Any]:
        return {"tool": self.tool, **dict(self.args)}


def read_lines(start: int, end: int) -> RetrievalCall:
    """Read lines `start`..`end` (1-based, inclusive)."""
    return RetrievalCall("read_large_output", (("start_line", start), ("end_line", max(start, end))))


def search_pattern(pattern: str, *, case_sensitive: bool = False) -> RetrievalCall:
    """Search for an RE2 pattern (case-insensitive unless asked, as search_large_output defaults)."""
    if case_sensitive:
        return RetrievalCall("search_large_output", (("pattern", pattern), ("case_sensitive", True)))
    return RetrievalCall("search_large_output", (("pattern", pattern),))


def sql_query(query: str) -> RetrievalCall:
    """Run SQL over the output as table t (query_large_output tells SQL from jq by its first word)."""
    return RetrievalCall("query_large_output", (("query", query),))


def sql_identifier(name: str) -> str:
    """A column name as a DuckDB identifier: double-quoted, inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def regex_escape(text: str) -> str:
    """`text` as an RE2 pattern matching it literally (only the metacharacters escaped: short and readable)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)
