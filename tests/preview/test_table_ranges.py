"""A table's column ranges are the whole column's (a 20,000-row CSV whose id runs 0-19,999 previewed
`id: integer (0…1999)` under "types from the first rows", which a model reads as the range), or plainly labelled as
the sampled rows' when the table is too large for one more pass within the preview's time (`_EXACT_CHARS`)."""

from __future__ import annotations

import pytest

from mcp_offload.preview import build_preview
from mcp_offload.preview.table import _EXACT_CHARS, _SAMPLE_ROWS
from mcp_offload.preview.text import count_lines
from support.cpu_time import cpu_spent
from support.preview import len4


def _csv(rows: int, *, quoted: bool = False, late: str | None = None) -> str:
    customer = '"cust, {}"' if quoted else "cust {}"  # a delimiter inside quotes: the csv module reads it
    body = [
        f"{i},{customer.format(i % 50)},{i * 0.5},2024-{1 + i * 12 // rows:02d}-{1 + i % 28:02d}" for i in range(rows)
    ]
    if late is not None:
        body[-1] = f"{rows - 1},x,{late},2024-12-31"
    return "id,customer,amount,day\n" + "\n".join(body) + "\n"


def _columns(text: str) -> list[str]:
    preview = build_preview(text, "text", budget_tokens=2000, count_tokens=len4, total_lines=count_lines(text))
    lines = preview.text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("columns"))
    return lines[start : start + 5]


@pytest.mark.parametrize("quoted", [False, True])
def test_ranges_past_the_sample_are_the_whole_columns(quoted: bool) -> None:
    text = _csv(4_000, quoted=quoted)
    assert len(text) <= _EXACT_CHARS and _SAMPLE_ROWS < 4_000
    columns = _columns(text)
    assert columns == [
        f"columns (types from the first {_SAMPLE_ROWS:,} rows, ranges over all rows):",
        "  id: integer (0…3999)",
        "  customer: text",
        "  amount: number (0…1999.5)",
        "  day: date (2024-01-01…2024-12-28)",
    ]


def test_a_table_within_the_sample_says_nothing_about_sampling() -> None:
    assert _columns(_csv(500))[:2] == ["columns:", "  id: integer (0…499)"]


def test_a_value_of_another_type_past_the_sample_labels_that_range_as_sampled() -> None:
    columns = _columns(_csv(4_000, late="n/a"))
    assert columns[0] == f"columns (types and ranges from the first {_SAMPLE_ROWS:,} rows only):"
    assert columns[1] == "  id: integer (0…3999)" and columns[3] == f"  amount: number (0…{(_SAMPLE_ROWS - 1) / 2:g})"


def test_a_table_too_large_for_another_pass_labels_its_ranges_as_the_samples() -> None:
    rows = 20_000
    while len(_csv(rows)) <= _EXACT_CHARS:
        rows *= 2
    columns = _columns(_csv(rows))
    assert columns[0] == f"columns (types and ranges from the first {_SAMPLE_ROWS:,} rows only):"
    assert columns[1] == f"  id: integer (0…{_SAMPLE_ROWS - 1})"


def test_the_whole_column_pass_is_cheap_at_the_size_limit() -> None:
    text = _csv(20_000)
    while len(text) * 2 <= _EXACT_CHARS:
        text = text + text[text.index("\n") + 1 :]
    with cpu_spent() as spent:
        _columns(text)
    assert spent.seconds < 1.0


def test_identical_rows_in_a_row_are_one_row_and_a_count() -> None:
    text = "a,b\n0,1\n" + "1,2\n" * 3000 + "".join(f"{i},x\n" for i in range(3, 40))
    preview = build_preview(text, "text", budget_tokens=500, count_tokens=len4, total_lines=count_lines(text))
    lines = preview.text.split("\n")
    start = lines.index(next(line for line in lines if line.startswith("first ")))
    assert lines[start + 1 : start + 5] == [
        "  0,1",
        "  1,2",
        "  … [the same row 2,999 more times: lines 4–3,002] …",
        "  3,x",
    ]
    shown = int(lines[start].split()[1].replace(",", ""))
    assert shown == preview.data["rows_shown"] > 3000  # the run counts as the rows it stands for
    if shown < 3038:
        assert f"read_large_output(start_line={shown + 2}," in preview.text  # the next rows: right after them
    assert preview.text.count("  1,2") == 1
