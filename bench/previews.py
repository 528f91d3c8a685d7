"""Previews by kind: what they cost (time, at 1/10/100 MB and in the whole offload) and what they save (tokens and
calls to answer a question), each next to today's text preview run in the same process.

Timing rows: the preview of a log and of plain text (no kind: sniffing only) against the text preview; the offload
of 100 MB (the core suite's log-like text, and plain text) against the same offload with kind sniffing off.
Answer rows: the real outputs of tests/support/preview_corpus.py, one question each. A preview that holds the
answer needs no call; else the fewest calls a model needs after the preview (scripted here: the same for both,
except where the preview by kind names a better call, as SQL for a table), run through the retrieval API (results
counted as the tools render them), and each answer is checked in what they return. Tokens = preview + call results,
by the server's tokenizer.
"""

from __future__ import annotations

import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import anyio

from bench.core import make_text, parse_size
from mcp_offload.core import outputs
from mcp_offload.core.render import render_query
from mcp_offload.core.services import Services, build_services
from mcp_offload.preview import build_preview, text_kinds
from mcp_offload.preview.text import count_lines, text_preview
from mcp_offload.settings import Settings

sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
from support.preview_corpus import corpus


@contextmanager
def sniffing_off() -> Iterator[None]:
    """Today's behaviour: every text gets the text preview."""
    # patch.object, not an assignment: text_kinds imports sniff_text_kind without re-exporting it, and patch.object
    # fails loudly if the name moves (a plain assignment would add an unused attribute and measure nothing)
    with mock.patch.object(text_kinds, "sniff_text_kind", lambda text: None):
        yield


def _prose(size: int, rng: random.Random) -> str:
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "seven",
        "wizards",
        "quietly",
        "judge",
        "boxing",
        "matches",
    ]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choices(words, k=14))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _row(case: str, size: str, ours: float, yard: str, yard_ms: float, note: str = "") -> dict[str, Any]:
    return {
        "suite": "previews",
        "case": case,
        "size": size,
        "ours_ms": round(ours, 3),
        "yardstick": yard,
        "yardstick_ms": round(yard_ms, 3),
        "ratio": round(ours / yard_ms, 2) if yard_ms else None,
        "note": note,
    }


def timing_rows(sizes: list[str], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for label in sizes:
        size = parse_size(label)
        for name, text in (("log", make_text(size, random.Random(1))), ("plain text", _prose(size, random.Random(2)))):
            lines = count_lines(text)
            ours = _median_ms(
                lambda t=text, n=lines: build_preview(t, "text", budget_tokens=420, total_lines=n),  # type: ignore[misc]
                repeat,
            )
            today = _median_ms(
                lambda t=text, n=lines: text_preview(t, 420, lambda s: (len(s) + 3) // 4, n),  # type: ignore[misc]
                repeat,
            )
            kind = build_preview(text, "text", budget_tokens=420, total_lines=lines).data.get("type") or "text"
            rows.append(_row(f"preview of {name}", label, ours, "text preview", today, f"shown as {kind}"))
    return rows


async def _offload_ms(services: Services, text: str, repeat: int) -> tuple[float, float]:
    """Medians of the offload with and without kind sniffing, taken in turns (the VM's speed drifts)."""
    ours: list[float] = []
    today: list[float] = []
    for _ in range(repeat):
        for sink, off in ((ours, False), (today, True)):
            scope = outputs.SessionScope.new()
            started = time.perf_counter()
            if off:
                with sniffing_off():
                    await outputs.offload(services, scope, text)
            else:
                await outputs.offload(services, scope, text)
            sink.append((time.perf_counter() - started) * 1000)
    return statistics.median(ours), statistics.median(today)


async def offload_rows(label: str, repeat: int, store: str) -> list[dict[str, Any]]:
    size = parse_size(label)
    services = build_services(Settings(store=store, max_output_bytes=2 * size + 1_000_000))
    rows = []
    try:
        for name, text in (
            ("offload of a log", make_text(size, random.Random(1))),
            ("offload of plain text", _prose(size, random.Random(2))),
        ):
            ours, today = await _offload_ms(services, text, repeat)
            rows.append(_row(name, label, ours, "same, sniffing off", today, "whole outputs.offload"))
    finally:
        await services.aclose()
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Tokens and calls to an answer
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    corpus_name: str
    question: str
    answer: Callable[[str], list[str]]  # the strings that make up the answer, from the output itself
    today: Callable[[str], list[dict[str, Any]]]  # the fewest calls after today's preview (scripted)
    # the calls after the preview by kind, where it names a better one than today's (SQL for a table); else today's
    by_kind: Callable[[str], list[dict[str, Any]]] | None = None


def _first_error(text: str) -> list[str]:
    lines = text.split("\n")
    i = next(i for i, line in enumerate(lines) if line.startswith("ERROR:"))
    cause = next(line for line in lines[i:] if line.startswith("RuntimeError"))
    return [f"{i + 1}", cause.split(":", 1)[1].strip().rsplit(" ", 1)[0]]


def _accepted(text: str) -> list[str]:
    return [f"{sum(1 for line in text.split(chr(10)) if 'Accepted connection' in line)}×"]


def _files_and_counts(text: str) -> list[str]:
    """The 3 largest file changes (one per file section: `git log -p` shows a file once per commit)."""
    sections: list[list[Any]] = []
    header = False
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            sections.append([line.split(" b/", 1)[1], 0, 0])
            header = True
        elif line.startswith("@@ "):
            header = False
        elif re.match(r"commit [0-9a-f]{40}", line):
            header = True
        elif sections and not header and line[:1] in ("+", "-"):
            sections[-1][1 if line[0] == "+" else 2] += 1
    top = sorted(sections, key=lambda s: -(s[1] + s[2]))[:3]
    return [f"{p} +{a:,} −{r:,}" for p, a, r in top]


def _definition_span(name: str, keyword: str) -> Callable[[str], list[str]]:
    def answer(text: str) -> list[str]:
        lines = text.split("\n")
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*{keyword}\s+{name}\b", line))
        return [f"{start + 1}", name]

    return answer


def _heading_line(title: str) -> Callable[[str], list[str]]:
    def answer(text: str) -> list[str]:
        lines = text.split("\n")
        return [f"L{next(i for i, line in enumerate(lines) if line.lstrip('#').strip() == title) + 1}"]

    return answer


def _html_headings(text: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h2>(.*?)</h2>", text)[:3]]


def _untyped(text: str) -> list[str]:
    import csv
    import io

    return [row["name"] for row in csv.DictReader(io.StringIO(text)) if row["typed"] == "false"][:3]


def _read_all(text: str) -> list[dict[str, Any]]:
    """Reading the whole output (the read cap decides how many calls)."""
    return [{"tool": "read_all"}]


QUESTIONS = [
    Question(
        "uvicorn log",
        "which error came first, on which line, and what caused it?",
        _first_error,
        lambda t: [
            {"tool": "search_large_output", "pattern": "ERROR"},
            {"tool": "read_large_output", "start_line": _first_error(t)[0], "span": 16},
        ],
    ),
    Question(
        "redis-server log",
        "how many client connections were accepted?",
        _accepted,
        lambda t: [{"tool": "search_large_output", "pattern": "Accepted connection"}],
    ),
    Question("git diff", "which 3 files changed most, with +/- counts?", _files_and_counts, _read_all),
    Question("git log -p", "which 3 file changes were largest, with +/- counts?", _files_and_counts, _read_all),
    Question(
        "packages.csv",
        "which installed packages ship no py.typed? (first 3)",
        _untyped,
        lambda t: [{"tool": "search_large_output", "pattern": ",false,"}],
        # the preview types typed as boolean and names SQL over table t with its columns
        lambda t: [{"tool": "query_large_output", "query": "SELECT name FROM t WHERE NOT typed LIMIT 3"}],
    ),
    Question(
        "python: typing.py",
        "where does class ForwardRef start?",
        _definition_span("ForwardRef", "class"),
        lambda t: [{"tool": "search_large_output", "pattern": r"^class ForwardRef\b"}],
    ),
    Question(
        "javascript: import-linter explorer.js",
        "where does function loadGraph start?",
        _definition_span("loadGraph", "(?:async )?function"),
        lambda t: [{"tool": "search_large_output", "pattern": r"function loadGraph\b"}],
    ),
    Question(
        "openai api.md",
        "on which line does the section 'InputTokens' start?",
        _heading_line("InputTokens"),
        lambda t: [{"tool": "search_large_output", "pattern": r"^#+ InputTokens"}],
    ),
    Question(
        "html: markdown-it page",
        "what are the page's first three section headings?",
        _html_headings,
        lambda t: [{"tool": "search_large_output", "pattern": "<h2>"}],
    ),
]


async def _answer_cost(
    services: Services, scope: outputs.SessionScope, handle: str, preview: str, calls: list[dict[str, Any]], lines: int
) -> tuple[int, int, str]:
    """(calls made, tokens of what they returned, all text seen)."""
    seen, tokens, made = preview, 0, 0
    for call in calls:
        if call["tool"] == "read_all":
            start = 1
            while start <= lines:
                out = await outputs.read(services, scope, handle, start_line=start, end_line=lines)
                made, tokens, seen = made + 1, tokens + out.tokens, seen + "\n" + out.text
                start = out.end + 1
            continue
        made += 1
        if call["tool"] == "query_large_output":  # SQL, as the tool renders it
            found = await outputs.query(services, scope, handle, call["query"])
            shown = render_query(found, services.settings.jq_max_output_chars, sql=True)
            tokens += services.tokens.count(shown)
            seen += "\n" + shown
        elif call["tool"] == "read_large_output":
            start = int(call["start_line"])
            out_read = await outputs.read(
                services, scope, handle, start_line=start, end_line=min(lines, start + call.get("span", 0))
            )
            tokens += out_read.tokens
            seen += "\n" + out_read.text
        else:
            searched = await outputs.search(services, scope, call["pattern"], handle=handle)
            shown = f"{searched.total_matches}×\n" + "\n".join(f"L{m.line}: {m.text}" for m in searched.matches)
            tokens += services.tokens.count(shown)
            seen += "\n" + shown
    return made, tokens, seen


async def answer_rows(store: str) -> list[dict[str, Any]]:
    services = build_services(Settings(store=store))
    texts = {name: text for _, name, text in corpus()}
    rows: list[dict[str, Any]] = []
    try:
        for q in QUESTIONS:
            text = texts[q.corpus_name]
            answer = q.answer(text)
            scope = outputs.SessionScope.new()
            out = await outputs.offload(services, scope, text)
            with sniffing_off():
                old = await outputs.offload(services, scope, text)
            result: dict[str, Any] = {}
            for label, stored, calls in (
                ("by kind", out, [] if all(a in out.preview for a in answer) else (q.by_kind or q.today)(text)),
                ("today", old, [] if all(a in old.preview for a in answer) else q.today(text)),
            ):
                made, tokens, seen = await _answer_cost(
                    services, scope, stored.handle, stored.preview, calls, out.lines
                )
                preview_tokens = services.tokens.count(stored.preview)
                result[label] = (made, preview_tokens + tokens, all(a in seen for a in answer))
            (new_calls, new_tokens, new_ok), (old_calls, old_tokens, old_ok) = result["by kind"], result["today"]
            rows.append(
                {
                    "suite": "previews",
                    "case": f"{q.corpus_name}: {q.question}",
                    "size": f"{out.tokens:,} tok",
                    "kind": out.shape.get("type", "text"),
                    "calls": new_calls,
                    "tokens": new_tokens,
                    "answered": new_ok,
                    "today_calls": old_calls,
                    "today_tokens": old_tokens,
                    "today_answered": old_ok,
                    "note": f"by kind: {new_calls} call(s), {new_tokens:,} tok; today: {old_calls} call(s), "
                    f"{old_tokens:,} tok" + ("" if new_ok else " [by kind: NOT ANSWERED]"),
                }
            )
    finally:
        await services.aclose()
    return rows


def run(args: Any) -> list[dict[str, Any]]:
    sizes = ["1M", "10M"] if args.quick else ["1M", "10M", "100M"]
    repeat = max(1, math.ceil(args.repeat / 2))
    rows = timing_rows(sizes, repeat)
    with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-") as tmp:
        rows += anyio.run(offload_rows, sizes[-1], repeat, str(Path(tmp) / "store"))
        rows += anyio.run(answer_rows, str(Path(tmp) / "store2"))
    return rows
