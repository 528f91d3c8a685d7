"""The preview of a table (CSV, TSV, `;`- or `|`-separated): delimiter, header, column types, rows, sample rows.

A table is sniffed from its first lines (`sniff_delimiter`: the delimiter that splits at least 90 % of them into
the same number of fields, two or more). Its columns are typed from the first `_SAMPLE_ROWS` rows (integer,
number, boolean, date, datetime, text; with the range of numbers and dates and the values of a text column that
holds few), so the typing does not grow with the table. The ranges are over every row: a table past the sample and
up to `_EXACT_CHARS` gets one more pass over the number and date columns, and a larger one says its ranges are the
sampled rows' (a model reads "id: integer (0…1999)" as the column's range).

Rows are lines: a row count is exact unless a quoted field spans lines (then it is marked "~"). The ready calls read
rows by line, and for a column of few values select the rows where
it holds one and count rows per value, in SQL (query_large_output: the table is t, columns named by the header);
a table without a header (which DuckDB would read with its first row as the header), or whose sampled rows are
not valid UTF-8 (which DuckDB refuses to read), gets a search pattern that skips the fields before the column
(quoted fields included) instead.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from mcp_offload.preview.calls import (
    RetrievalCall,
    read_lines,
    regex_escape,
    search_pattern,
    sql_identifier,
    sql_query,
    sql_string,
)
from mcp_offload.preview.fit import largest, plural
from mcp_offload.preview.listing import Listing, fit_listing
from mcp_offload.unicode import replace_surrogates

__all__ = ["sniff_delimiter", "table_preview"]

_DELIMITERS = ("\t", ",", ";", "|")
_NAMES = {"\t": "tab", ",": "comma", ";": "semicolon", "|": "pipe"}
_CONSISTENT = 0.9
_SNIFF_ROWS = 200
_SAMPLE_CHARS = 1_000_000
_SAMPLE_ROWS = 1_000
_FEW_VALUES = 12
_CELL_WIDTH = 40
_ROW_WIDTH = 200
_SAMPLE_SHOWN = 3
_SAMPLE_MAX = 40
_ROWS_READ = 20
_ROWS_SELECTED = 10

_RANGED = ("integer", "number", "date", "datetime")
# Past the sampled rows, the ranges of number and date columns are taken over every row when the table is at most
# this big (measured here: ~25 ms a MB; with quoted fields, read by the csv module, ~80 ms a MB): the preview is part
# of the offload's answer and its work stays within ~15 ms. A larger table's ranges are labelled as the sampled
# rows' (SQL min/max gives exact ones).
_EXACT_CHARS = 200_000

_INT = re.compile(r"[-+]?\d{1,18}\Z")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)\Z", re.IGNORECASE)
_BOOL = frozenset({"true", "false", "yes", "no", "t", "f"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\Z")


def _rows(text: str, delimiter: str, limit: int | None = None) -> list[list[str]]:
    """The rows of `text` (the first `limit` of them: the rest is not parsed), or none when it does not parse."""
    try:
        return list(islice(csv.reader(io.StringIO(text), delimiter=delimiter, strict=False), limit))
    except csv.Error:  # a NUL byte, a field over the size limit
        return []


def sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter splitting >= 90 % of the non-blank `lines` (3 or more) into one field count >= 2, else None."""
    sample = [line for line in lines[:_SNIFF_ROWS] if line.strip()]
    if len(sample) < 3:
        return None
    best: tuple[float, int, str] | None = None
    for delimiter in _DELIMITERS:
        if not any(delimiter in line for line in sample[:3]):
            continue
        rows = _rows("\n".join(sample), delimiter)
        if len(rows) < 3:
            continue
        widths = Counter(len(r) for r in rows)
        width, same = widths.most_common(1)[0]
        share = same / len(rows)
        least = 2 if delimiter in "\t," else 3
        fits = width >= least and share >= _CONSISTENT and len(rows[0]) == width
        if fits and (best is None or share > best[0]):
            best = (share, width, delimiter)
    return best[2] if best else None


@dataclass(slots=True)
class _Column:
    name: str
    values: list[str] = field(default_factory=list)

    def describe(self, exact: tuple[str, str] | None = None) -> tuple[str, str]:
        """(type, a short note: range, values or emptiness); `exact`: the range over every row, when known."""
        present = [v for v in self.values if v.strip()]
        empty = len(self.values) - len(present)
        note = f"{empty:,} empty" if empty else ""
        if not present:
            return "empty", ""
        kind = _type_of(present)
        extra = ""
        if exact is not None and kind in _RANGED:
            extra = f"{exact[0]}…{exact[1]}"
        elif kind in ("integer", "number"):
            numbers = [float(v) for v in present]
            low, high = min(numbers), max(numbers)
            extra = f"{_number(low)}…{_number(high)}"
        elif kind in ("date", "datetime"):
            extra = f"{min(present)}…{max(present)}"
        elif kind == "text":
            distinct = Counter(present)
            if len(distinct) <= _FEW_VALUES and len(present) > len(distinct):
                extra = "values " + "|".join(_cell(v, 20) for v, _ in distinct.most_common(6))
                if len(distinct) > 6:
                    extra += f"|… ({len(distinct)})"
        return kind, ", ".join(x for x in (extra, note) if x)


def _number(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


def _type_of(values: list[str]) -> str:
    if all(_INT.match(v.strip()) for v in values):
        return "integer"
    if all(_FLOAT.match(v.strip()) for v in values):
        return "number"
    if all(v.strip().lower() in _BOOL for v in values):
        return "boolean"
    if all(_DATE.match(v.strip()) for v in values):
        return "date"
    if all(_DATETIME.match(v.strip()) for v in values):
        return "datetime"
    return "text"


def _cell(value: str, width: int = _CELL_WIDTH) -> str:
    value = replace_surrogates(value.replace("\n", " "))
    return value if len(value) <= width else value[: width - 1] + "…"


def _has_header(rows: list[list[str]]) -> bool:
    """A first row of distinct non-empty, non-numeric names, over a column whose rows are typed otherwise."""
    first = rows[0]
    if len(rows) < 2 or any(not c.strip() for c in first) or len(set(first)) < len(first):
        return False
    if any(_FLOAT.match(c.strip()) or _DATE.match(c.strip()) or _DATETIME.match(c.strip()) for c in first):
        return False
    body = rows[1:]
    for i in range(len(first)):
        column = [r[i] for r in body if i < len(r) and r[i].strip()]
        if column and _type_of(column) != "text":
            return True
    if any(ch.isdigit() for cell in first for ch in cell):
        return False
    for i, name in enumerate(first):  # all-text table: a header cell is shaped unlike the cells under it
        shapes = Counter(_shape(r[i]) for r in body[:200] if i < len(r) and r[i].strip())
        if shapes and _shape(name) not in shapes and shapes.most_common(1)[0][1] * 2 >= sum(shapes.values()):
            return True
    return False


def _shape(cell: str) -> str:
    """A cell's shape: letters as "a", digits as "9", runs folded ("0.8.0" -> "9.9.9", "v1" -> "a9")."""
    out: list[str] = []
    for ch in cell.strip():
        c = "a" if ch.isalpha() else "9" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def _exact_ranges(
    text: str, delimiter: str, header: bool, width: int, columns: list[tuple[int, str]], aligned: bool
) -> dict[int, tuple[str, str]]:
    """(low, high) over every row of the numbered (index, type) columns; a column holding a value of another type
    past the sample gets none (its range is then labelled as the sample's)."""
    values_of = _column_values(text, delimiter, header, width, aligned)
    found: dict[int, tuple[str, str]] = {}
    for i, kind in columns:
        values = [v for v in values_of(i) if v]
        if kind in ("integer", "number"):
            try:
                numbers = list(map(float, values))  # float() takes the spaces around a number
            except ValueError:
                try:
                    numbers = [float(v) for v in values if v.strip()]
                except ValueError:
                    continue
            if numbers:
                found[i] = (_number(min(numbers)), _number(max(numbers)))
        elif values := [v for v in map(str.strip, values) if v]:
            low, high = min(values), max(values)  # ISO dates and times sort as text
            shape = _DATE if kind == "date" else _DATETIME
            if shape.match(low) and shape.match(high):
                found[i] = (low, high)
    return found


def _column_values(text: str, delimiter: str, header: bool, width: int, aligned: bool) -> Callable[[int], list[str]]:
    """A column's values by index. A table of plain fields whose sampled rows all had `width` fields is
    split once as a whole (`str.split` in C, then every width-th field), when its delimiter count
    says every line has `width` fields; otherwise row by row (the csv module when fields are quoted)."""
    body = text.replace("\r\n", "\n") if "\r" in text else text
    if header:
        body = body[body.find("\n") + 1 :] if "\n" in body else ""
    body = body.rstrip("\n")
    lines = body.count("\n") + 1 if body else 0
    if aligned and '"' not in body and body.count(delimiter) == (width - 1) * lines:
        flat = body.replace("\n", delimiter).split(delimiter)
        return lambda i: flat[i::width]
    rows = _rows(body, delimiter) if '"' in body else [line.split(delimiter) for line in body.split("\n")]
    return lambda i: [r[i] for r in rows if i < len(r)]


def _field_skip(delimiter: str) -> str:
    d = regex_escape(delimiter) if delimiter != "\t" else r"\t"
    return rf'(?:"(?:[^"]|"")*"|[^{d}"\n]*){d}'


def table_preview(
    text: str, delimiter: str, budget: int, count: Callable[[str], int], total_lines: int
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary), or None when the text does not parse as a table after all."""
    head = text[:_SAMPLE_CHARS]
    if len(text) > len(head):
        head = head[: head.rfind("\n") + 1] or head
    rows = [r for r in _rows(head, delimiter, _SAMPLE_ROWS + 1) if r]
    if len(rows) < 2:
        return None
    header = _has_header(rows)
    width = Counter(len(r) for r in rows).most_common(1)[0][0]
    names = rows[0] if header else [f"column {i + 1}" for i in range(width)]
    body = rows[1:] if header else rows
    ragged = sum(1 for r in body if len(r) != len(names))
    columns = [_Column(replace_surrogates(n)) for n in names]
    for row in body:
        for column, value in zip(columns, row, strict=False):
            column.values.append(value)
    lines_in_sample = head.count("\n") + (0 if head.endswith("\n") else 1)
    rows_in_sample = len(rows) if len(rows) <= _SAMPLE_ROWS else None
    spans_lines = rows_in_sample is not None and rows_in_sample < lines_in_sample - head.count("\n\n")
    trailing_blank = 1 if text.endswith("\n\n") else 0
    data_rows = total_lines - (1 if header else 0) - trailing_blank
    approx = "~" if spans_lines else ""
    first_row_line = 2 if header else 1

    facts = [
        f"table ({_NAMES[delimiter]}-separated): {approx}{plural(data_rows, 'row')} × {plural(len(names), 'column')}"
        + (", header on line 1" if header else ", no header")
        + ("" if spans_lines else f"; row n is line {'n+1' if header else 'n'}")
    ]
    if spans_lines:
        facts.append("some quoted fields span lines: rows and lines differ")
    if ragged:
        facts.append(f"{ragged:,} of {len(body):,} sampled rows have another number of fields than the header")
    sampled_all = rows_in_sample is not None and len(body) >= data_rows - (1 if spans_lines else 0)
    typed = [(c, *c.describe()) for c in columns]
    ranged = [(i, kind) for i, (_, kind, _) in enumerate(typed) if kind in _RANGED]
    exact: dict[int, tuple[str, str]] = {}
    if not sampled_all and ranged and len(text) <= _EXACT_CHARS:
        exact = _exact_ranges(text, delimiter, header, len(names), ranged, aligned=not ragged)
        typed = [(c, *c.describe(exact[i])) if i in exact else typed[i] for i, c in enumerate(columns)]
    if sampled_all or not ranged:
        columns_title = "columns:"
    elif len(exact) == len(ranged):
        columns_title = f"columns (types from the first {plural(len(body), 'row')}, ranges over all rows):"
    else:
        columns_title = f"columns (types and ranges from the first {plural(len(body), 'row')} only):"
    entries = [f"  {_cell(c.name)}: {kind}" + (f" ({note})" if note else "") for c, kind, note in typed]
    sample_lines = _sample_rows(head, first_row_line, collapse=not spans_lines)
    calls: list[tuple[str, RetrievalCall]] = []
    sql_reads = text.isascii() or _is_utf8(head)  # DuckDB refuses a CSV with invalid UTF-8 (lone surrogates)
    for i, (column, kind, _) in enumerate(typed):
        picked = _query_value(column.values, kind)
        if picked is None:
            continue
        value = picked
        where = f"rows where {_cell(column.name, 24)} is {_cell(value, 24)}"
        if header and column.name.strip() and sql_reads:  # DuckDB names the columns after the header
            name = sql_identifier(column.name)
            selected = f"SELECT * FROM t WHERE {name} = {sql_string(value)} LIMIT {_ROWS_SELECTED}"
            calls.append((f"{where} (SQL over table t)", sql_query(selected)))
            query = f"SELECT {name}, count(*) AS n FROM t GROUP BY 1 ORDER BY n DESC"
            calls.append((f"rows per {_cell(column.name, 24)}", sql_query(query)))
        else:
            pattern = "^" + (f"(?:{_field_skip(delimiter)}){{{i}}}" if i else "") + f'"?{regex_escape(value)}"?'
            pattern += rf"(?:{regex_escape(delimiter) if delimiter != chr(9) else chr(92) + 't'}|$)"
            calls.append((where, search_pattern(pattern)))
        break
    if data_rows > _ROWS_READ:
        last = total_lines - trailing_blank
        calls.append(("the last rows", read_lines(max(first_row_line, last - 4), last)))

    def with_rows(n: int) -> Listing:
        rows = sum(covered for _, covered, _ in sample_lines[:n])
        shown = [*facts, f"first {plural(rows, 'row')}:", *(text for text, _, _ in sample_lines[:n])]
        title = columns_title
        if n < len(sample_lines):  # the first row not shown
            after = sample_lines[n][2]
        else:
            after = sample_lines[n - 1][2] + sample_lines[n - 1][1] if n else first_row_line
        last_line = total_lines - trailing_blank
        more_rows = rows < data_rows
        reads = [("the next rows", read_lines(after, min(last_line, after + _ROWS_READ - 1)))] if more_rows else []
        return fit_listing(shown, title, entries, reads + calls, budget, count, entries_noun="more columns")

    # At least a few rows; then as many more as the budget holds once every column is listed (rows answer
    # questions by themselves: a small table may fit whole).
    rows_shown = min(_SAMPLE_SHOWN, len(sample_lines))
    listing = with_rows(rows_shown)
    if listing.entries_shown == len(entries) and len(sample_lines) > rows_shown:
        more = largest(rows_shown + 1, len(sample_lines), lambda n: with_rows(n).entries_shown == len(entries))
        if more > rows_shown:
            rows_shown, listing = more, with_rows(more)
    rows_shown = sum(covered for _, covered, _ in sample_lines[:rows_shown])
    data: dict[str, Any] = {
        "type": "table",
        "delimiter": delimiter,
        "header": header,
        "rows": data_rows,
        "rows_exact": not spans_lines,
        "columns": [[c.name, kind] for c, kind, _ in typed[: listing.entries_shown]],
        "ragged_rows_in_sample": ragged,
        "rows_sampled": len(body),
        "ranges_exact": sampled_all or len(exact) == len(ranged),
        "rows_shown": rows_shown,
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data


def _sample_rows(head: str, first_row_line: int, *, collapse: bool) -> list[tuple[str, int, int]]:
    """Up to `_SAMPLE_MAX` shown rows from the head: (text, rows it stands for, its line number). With `collapse`
    (rows are lines), a run of 3 or more identical rows is one row and a note of how many more and where."""
    lines = head.split("\n")
    shown: list[tuple[str, int, int]] = []
    i = first_row_line - 1
    while i < len(lines) and len(shown) < _SAMPLE_MAX:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        run = 1
        while collapse and i + run < len(lines) and lines[i + run] == line:
            run += 1
        text = "  " + _cell(line, _ROW_WIDTH)
        if run >= 3:
            note = f"  … [the same row {run - 1:,} more times: lines {i + 2:,}–{i + run:,}] …"
            shown.append((f"{text}\n{note}", run, i + 1))
        else:
            shown.append((text, 1, i + 1))
            run = 1
        i += run
    return shown


def _is_utf8(text: str) -> bool:
    """Whether `text` is valid UTF-8 once stored (no lone surrogates). Only the sampled head is checked: past it, a
    SQL call fails with DuckDB's clear error naming the line."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _query_value(values: list[str], kind: str) -> str | None:
    """A value of a column worth selecting rows by: a repeated short text value, not the most common if it dominates
    (printable: no control characters or lone surrogates, which a SQL literal or a pattern would carry badly)."""
    if kind not in ("text", "boolean"):
        return None
    counts = Counter(v for v in values if v.strip() and "\n" not in v and len(v) <= 30 and v.isprintable())
    if len(counts) < 2 or len(counts) > _FEW_VALUES:
        return None
    ranked = counts.most_common()
    value, n = ranked[1] if ranked[0][1] * 2 > len(values) else ranked[0]
    return value if n > 1 else None
