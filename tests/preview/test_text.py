"""preview/text.py: head and tail lines, long lines cut, omitted range named, budget held."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.preview import build_preview, estimate_tokens
from support.cpu_time import cpu_spent
from support.preview import len4, word_tokens


def test_text_preview_head_tail_and_markers() -> None:
    lines = [f"line {i:05d} " + ("y" * 500 if i == 3 else "payload") for i in range(1, 10_001)]
    text = "\n".join(lines) + "\n"
    preview = build_preview(text, "text", budget_tokens=500, count_tokens=len4, total_lines=10_000)
    assert preview.kind == "text"
    assert preview.tokens == len4(preview.text) <= 500
    out = preview.text.split("\n")
    assert out[0] == f"text: 10,000 lines, {len(text):,} chars"
    assert out[1] == "line 00001 payload"
    assert out[3] == "line 00003 " + "y" * 189 + "… [+311 chars]"  # cut at 200 chars
    assert out[-1] == "line 10000 payload"
    head, tail = preview.data["head_lines"], preview.data["tail_lines"]
    assert len(head) > len(tail) > 3
    first_omitted, last_omitted = len(head) + 1, 10_000 - len(tail)
    assert preview.data["omitted_lines"] == [first_omitted, last_omitted]
    assert f"… [lines {first_omitted:,}–{last_omitted:,} omitted] …" in out
    assert out[len(head) + 2] == f"line {last_omitted + 1:05d} payload"
    json.dumps(preview.data)


def test_text_preview_small_text_shown_whole() -> None:
    text = "alpha\nbeta\n\ngamma"
    preview = build_preview(text, "text", count_tokens=len4)
    assert preview.text == "text: 4 lines, 17 chars\nalpha\nbeta\n\ngamma"
    assert preview.data["omitted_lines"] is None
    assert build_preview("one\n", "text", count_tokens=len4).text == "text: 1 line, 4 chars\none"


def test_text_preview_single_huge_line_gets_the_budget() -> None:
    text = "".join(f"{i:07d}," for i in range(500_000))  # 4 MB, one line
    preview = build_preview(text, "text", budget_tokens=500, count_tokens=len4)
    assert preview.tokens <= 500
    shown = preview.text.split("\n")[1]
    assert shown.startswith("0000000,0000001,")
    assert len(shown) > 1000  # far more than the 200 chars a line gets among many
    assert shown.endswith(f"… [+{len(text) - len(shown.split('…')[0]):,} chars]")


@pytest.mark.parametrize("budget", [0, 5, 12, 40, 120, 500, 2000])
@pytest.mark.parametrize("counter", [len4, word_tokens, estimate_tokens])
def test_text_preview_respects_budget(budget: int, counter: Any) -> None:
    text = "\n".join(f"{i} the quick brown fox {'é' * (i % 50)} jumps" for i in range(3000))
    preview = build_preview(text, "text", budget_tokens=budget, count_tokens=counter)
    assert preview.tokens == counter(preview.text) <= budget


def test_text_preview_of_lone_surrogates_is_sendable() -> None:
    text = "ok\nbad \ud800 here\n" * 50
    preview = build_preview(text, "text", count_tokens=len4)
    preview.text.encode("utf-8")
    json.dumps(preview.data, ensure_ascii=False).encode("utf-8")
    assert "bad \ufffd here" in preview.text


# -- runs of identical lines -----------------------------------------------------------------------------------------

_RUN = re.compile(r"… \[the same line ([\d,]+) more times: lines ([\d,]+)–([\d,]+)\] …")
_OMITTED = re.compile(r"… \[lines ([\d,]+)–([\d,]+) omitted\] …")


def _shown_lines(preview_text: str) -> dict[int, str]:
    """Line number → text, as a reader of the preview reconstructs it (runs expanded, the omitted range skipped)."""
    shown: dict[int, str] = {}
    number = 1
    for row in preview_text.split("\n")[1:]:
        run, omitted = _RUN.fullmatch(row), _OMITTED.fullmatch(row)
        if run:
            more, first, last = (int(g.replace(",", "")) for g in run.groups())
            assert (first, last) == (number, number + more - 1)
            for i in range(first, last + 1):
                shown[i] = shown[first - 1]
            number = last + 1
        elif omitted:
            first, last = (int(g.replace(",", "")) for g in omitted.groups())
            assert first == number
            number = last + 1
        else:
            shown[number] = row
            number += 1
    return shown


def test_five_thousand_identical_lines_preview_as_one_line_and_a_count() -> None:
    preview = build_preview("hello\n" * 5000, "text", budget_tokens=500, count_tokens=len4)
    assert preview.text == "text: 5,000 lines, 30,000 chars\nhello\n… [the same line 4,999 more times: lines 2–5,000] …"
    assert preview.data["omitted_lines"] is None


def test_runs_anywhere_are_collapsed_and_the_line_numbers_stay_exact() -> None:
    lines = ["start", *["same"] * 40, "middle", "x", "x", *[""] * 10, *[f"row {i}" for i in range(3000)]]
    lines += ["end"] * 25
    text = "\n".join(lines)  # the last line has no "\n"
    preview = build_preview(text, "text", budget_tokens=500, count_tokens=len4, total_lines=len(lines))
    assert preview.tokens <= 500
    out = preview.text.split("\n")
    assert out[1:4] == ["start", "same", "… [the same line 39 more times: lines 3–41] …"]
    assert out[4:7] == ["middle", "x", "x"]  # two in a row cost less than the note
    assert out[7:9] == ["", "… [the same line 9 more times: lines 46–54] …"]
    n = len(lines)
    assert out[-2:] == ["end", f"… [the same line 24 more times: lines {n - 23:,}–{n:,}] …"]
    shown = _shown_lines(preview.text)
    assert shown and all(lines[i - 1] == t for i, t in shown.items())


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(st.tuples(st.sampled_from(["a", "b", "", "long " * 30, "é日"]), st.integers(1, 400)), max_size=30),
    final_newline=st.booleans(),
    budget=st.sampled_from([40, 200, 500, 5000]),
)
def test_a_preview_with_runs_reads_back_as_the_text(
    runs: list[tuple[str, int]], final_newline: bool, budget: int
) -> None:
    lines = [line for line, count in runs for _ in range(count)]
    text = "".join(line + "\n" for line in lines)
    if not final_newline and lines and lines[-1]:
        text = text[:-1]  # the last line without its "\n" (an empty one would not be a line then)
    preview = build_preview(text, "text", budget_tokens=budget, count_tokens=len4)
    assert preview.tokens <= budget
    shown = _shown_lines(preview.text)
    assert all(lines[i - 1] == t for i, t in shown.items() if not t.endswith(" chars]"))
    if preview.data["omitted_lines"] is None and lines and budget >= 200:
        assert set(shown) == set(range(1, len(lines) + 1))


def test_a_huge_run_costs_little() -> None:
    text = "the same log line again and again\n" * 1_500_000  # 51 MB
    with cpu_spent() as spent:
        preview = build_preview(text, "text", budget_tokens=500, count_tokens=len4)
    assert spent.seconds < 1.5
    assert preview.text.endswith("… [the same line 1,499,999 more times: lines 2–1,500,000] …")
