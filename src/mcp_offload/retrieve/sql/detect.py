"""Is a `query_large_output` query SQL or jq?

SQL starts with a statement keyword (SELECT, WITH, FROM, DESCRIBE, SUMMARIZE, ... and also the statements the SQL
sandbox refuses, such as COPY, ATTACH, INSTALL, SET or DROP, so that they get the SQL answer, not a jq error), after
optional `--` / `/* */` comments and opening parentheses. None of these words starts a jq program, except two jq
builtins: `select(...)` is jq unless the text also has a FROM word, and `values` is SQL only as `VALUES (`. And one jq
directive: `import "path" as name;` is jq (its string is double-quoted; SQL's `IMPORT DATABASE 'dir'` is not), so
it gets jq's refusal of imports, as `include "path";` does, not a SQL parser error.
"""

from __future__ import annotations

import re

TABLE = "t"  # the name the output's rows have in SQL

_LEAD = re.compile(r"^(?:\s+|--[^\n]*\n?|/\*.*?\*/|\()*", re.S)
_SQL_START = re.compile(
    r"(?:with|from|describe|summarize|pivot|unpivot|table|show|explain|copy|attach|detach|install|load|set|reset|"
    r"pragma|create|drop|insert|update|delete|alter|export|import|call|begin|commit|rollback|vacuum|checkpoint|use|"
    r"truncate|prepare|execute|deallocate)\b|values\s*\(",
    re.I,
)
_JQ_IMPORT = re.compile(r'import\s*"')  # jq keywords are lower case
_SELECT = re.compile(r"select\b", re.I)
_SELECT_CALL = re.compile(r"select\s*\(", re.I)
_FROM = re.compile(r"\bfrom\b", re.I)


def is_sql(query: str) -> bool:
    body = query[_LEAD.match(query).end() :]  # type: ignore[union-attr]  # the pattern matches the empty string
    if _JQ_IMPORT.match(body):
        return False
    if _SQL_START.match(body):
        return True
    if _SELECT.match(body):
        return not _SELECT_CALL.match(body) or bool(_FROM.search(body))
    return False
