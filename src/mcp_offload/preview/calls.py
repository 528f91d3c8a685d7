"""Ready retrieval calls a preview names: a line range to read or a pattern to search, as the model would write them.

Previews of text kinds (logs, tables, code, diffs, HTML, Markdown) name the calls that answer the usual next
question: `read_large_output(start_line=120, end_line=160)`, `search_large_output(pattern="\\bERROR\\b")`, and for
a table with a header, SQL over it as table t: `query_large_output(query="SELECT ... FROM t GROUP BY 1")`. Each one
is kept as data too (`as_data`), so the tests run every call a preview shows through the real retrieval API.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["RetrievalCall", "read_lines", "regex_escape", "search_pattern", "sql_identifier", "sql_query", "sql_string"]

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


# The words DuckDB does not take as a bare column name (its reserved keywords, the other keywords a SELECT list
# cannot name unquoted, and true/false/null, which it reads as values), from DuckDB 2.0's duckdb_keywords();
# tests/preview/test_table_sql.py checks the list against the installed DuckDB.
# fmt: off
SQL_KEYWORDS = frozenset((
    "all", "analyse", "analyze", "and", "anti", "any", "array", "as", "asc", "asof", "asymmetric", "at",
    "authorization", "binary", "both", "by", "case", "cast", "check", "collate", "collation", "column",
    "concurrently", "constraint", "create", "cross", "default", "deferrable", "desc", "describe", "distinct", "do",
    "else", "end", "except", "fetch", "for", "foreign", "freeze", "from", "full", "glob", "group", "having", "ilike",
    "in", "initially", "inner", "intersect", "into", "is", "isnull", "join", "lambda", "lateral", "leading", "left",
    "like", "limit", "natural", "not", "notnull", "offset", "on", "only", "or", "order", "outer", "overlaps", "pivot",
    "pivot_longer", "pivot_wider", "placing", "positional", "primary", "qualify", "references", "returning", "right",
    "select", "semi", "show", "similar", "some", "summarize", "symmetric", "table", "tablesample", "then", "to",
    "trailing", "union", "unique", "unpack", "unpivot", "using", "variadic", "verbose", "when", "where", "window",
    "with", "true", "false", "null"
))
# fmt: on
_BARE_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")


def sql_identifier(name: str) -> str:
    """A column name as a DuckDB identifier: bare when it is one already (lower case, not a keyword: `typed`),
    else double-quoted with inner quotes doubled (`"First Name"`). Bare names keep a query short in a preview, where
    every quote is shown escaped."""
    if _BARE_IDENTIFIER.match(name) and name not in SQL_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def sql_string(value: str) -> str:
    """A SQL string literal (`'it''s'`); DuckDB casts it to the column's type in a comparison (`typed = 'false'`)."""
    return "'" + value.replace("'", "''") + "'"


def regex_escape(text: str) -> str:
    """`text` as an RE2 pattern matching it literally (only the metacharacters escaped: short and readable)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)
