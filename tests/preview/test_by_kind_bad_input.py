"""Previews by kind on bad input (a data table): each case gets a sensible preview (its kind, or today's text
preview) within the budget and within bounded time, and what it shows is sendable."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from mcp_offload.preview import build_preview
from support.cpu_time import cpu_spent
from support.preview import len4

BUDGET = 420


def _log_lines(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    levels = ["INFO", "INFO", "DEBUG", "WARNING", "ERROR"]
    return [
        f"2026-11-24 20:{i // 60 % 60:02d}:{i % 60:02d},{i % 1000:03d} {rng.choice(levels)} worker{i % 4}: "
        f"job {i} took {rng.randint(1, 900)} ms"
        for i in range(n)
    ]


def _big_log(mb: int) -> str:
    block = "\n".join(_log_lines(20_000)) + "\n"
    return block * (mb * 1_000_000 // len(block) + 1)


def _random_words_log(mb: int) -> str:
    rng = random.Random(9)
    words = ["alpha", "beta", "gamma", "delta", "request", "handled", "user", "cache", "miss", "ok"]
    line = "2026-11-24T10:00:{:02d}Z INFO api: {}\n"
    block = "".join(line.format(i % 60, " ".join(rng.choices(words, k=12))) for i in range(10_000))
    return block * (mb * 1_000_000 // len(block) + 1)


def _binary_log() -> str:
    rng = random.Random(3)
    lines = _log_lines(300)
    return "\n".join(line + "".join(chr(rng.randrange(0, 32)) for _ in range(6)) for line in lines)


def _mixed_log() -> str:  # log lines, then a binary dump in the middle of it
    rng = random.Random(4)
    garbage = "".join(chr(rng.randrange(0, 256)) for _ in range(200_000))
    return "\n".join(_log_lines(200)) + "\n" + garbage + "\n" + "\n".join(_log_lines(200, 8))


def _ragged_csv(share_ragged: float) -> str:
    rng = random.Random(5)
    rows = ["id,name,state,score"]
    for i in range(400):
        fields = [str(i), f"n{i}", rng.choice(["ok", "bad"]), str(rng.randint(0, 99))]
        if rng.random() < share_ragged:
            fields = fields[: rng.randint(1, 3)] + ["x"] * rng.randint(0, 3)
        rows.append(",".join(fields))
    return "\n".join(rows) + "\n"


def _broken_python() -> str:  # Python's signals, but most of it is not Python
    good = "import os\nfrom x import y\n\ndef f(a):\n    return a\n\nclass C:\n    pass\n"
    bad = "}}} ((( while: :: => ]]] {{ @@ def ( class )) \n" * 40
    return (good + bad) * 30


CASES: list[tuple[str, Callable[[], str], str | None, float]] = [
    # (case, input, expected preview type (None: today's text preview), seconds allowed)
    ("log with control bytes on every line", _binary_log, None, 2.0),
    ("log with a binary dump in the middle", _mixed_log, None, 2.0),  # most lines unreadable: not mined
    ("ragged CSV, 60 % of rows ragged", lambda: _ragged_csv(0.6), None, 2.0),
    ("CSV with 4 % ragged rows", lambda: _ragged_csv(0.04), "table", 2.0),
    ("CSV with a 300 KB quoted field", lambda: 'a,b\n1,"' + "x" * 300_000 + '"\n2,y\n3,z\n', None, 2.0),
    ("huge single line (5 MB)", lambda: "ab, cd " * 700_000, None, 2.0),
    ("huge single log line (5 MB)", lambda: "2026-11-24 20:00:00 ERROR " + "x" * 5_000_000, None, 3.0),
    ("Python signals, grammar fails", _broken_python, None, 3.0),
    ("deeply nested JavaScript", lambda: "const a = 1;\nlet b = 2;\nvar c = " + "[" * 50_000 + "\n", None, 3.0),
    (
        "HTML with headings in scripts and comments",
        lambda: (
            "<!DOCTYPE html><html><body>\n<script>var s = '<h1>not a heading</h1>';</script>\n"
            "<!-- <h2>nor this</h2> -->\n"
            "<h1>Real &amp; <b>bold</b></h1>\n<p>text</p>\n<h2>Second</h2>\n</body></html>\n"
        ),
        "html",
        2.0,
    ),
    ("unclosed HTML soup", lambda: "<html><body>" + "<div><p>x<span>" * 20_000, "html", 3.0),
    (
        "diff with malformed hunk headers",
        lambda: "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n@@ -zz +yy @@\n+c\n",
        "diff",
        2.0,
    ),
    ("Markdown made of # comments (a shell script)", lambda: "#!/bin/sh\n# set up\n# more\necho hi\n" * 50, None, 2.0),
    ("50 MB log", lambda: _big_log(50), "log", 6.0),
    ("20 MB log of random words (Drain's worst case)", lambda: _random_words_log(20), "log", 3.0),
]


@pytest.mark.parametrize(("case", "make", "expected", "seconds"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_sensible_preview_in_bounded_time(
    case: str, make: Callable[[], str], expected: str | None, seconds: float
) -> None:
    text = make()
    with cpu_spent() as spent:
        preview = build_preview(text, "text", budget_tokens=BUDGET, count_tokens=len4)
    elapsed = spent.seconds
    assert preview.data.get("type") == expected, preview.text[:500]
    assert preview.tokens <= BUDGET
    preview.text.encode("utf-8")
    assert elapsed < seconds, f"{case}: {elapsed:.2f} s"
    if expected is None:
        assert preview.data["lines"] == text.count("\n") + (0 if text.endswith("\n") else 1)  # today's preview


def test_html_headings_skip_scripts_and_comments_and_read_as_text() -> None:
    text = CASES[9][1]()
    preview = build_preview(text, "text", budget_tokens=BUDGET, count_tokens=len4)
    assert preview.data["headings"] == [[4, 1, "Real & bold"], [6, 2, "Second"]]


def test_a_50_mb_log_is_mined_on_a_sample_and_says_so() -> None:
    text = _big_log(50)
    preview = build_preview(text, "text", budget_tokens=BUDGET, count_tokens=len4)
    assert preview.data["sampled_lines"] < 20_000
    assert "mined from a sample" in preview.text and "~" in preview.text
    total = text.count("\n")
    assert abs(sum(preview.data["levels"].values()) - total) < total * 0.02
    assert preview.data["last_error"]["line"] > total - 200
