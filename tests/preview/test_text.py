"""preview/text.py: head and tail lines, long lines cut, omitted range named, budget held."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_offload.preview import build_preview, estimate_tokens
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
