"""The ranked-search relevance set (tests/data/ranked/questions.json) and how it is scored: shared by the test
(tests/retrieve/test_ranked_search.py) and the benchmark (bench/ranked.py).

All corpora are stored in one session, each with its planted lines inserted; every question is asked across the
session (no handle) and within its own output. A question is answered when one of the top 3 passages holds a line
that contains its answer, in the right output.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from mcp_offload.core import outputs
from mcp_offload.core.services import Services

DATA = Path(__file__).parent.parent / "data" / "ranked"
TOP = 3


@dataclass(frozen=True)
class Case:
    corpus: str
    question: str
    answer: str | list[str]  # a line holding any of them answers the question
    at: int | None = None
    plant: str | None = None


def load_cases() -> list[Case]:
    raw = json.loads((DATA / "questions.json").read_text())
    return [Case(**q) for q in raw["questions"]]


def corpora(cases: list[Case]) -> dict[str, str]:
    """Each corpus's text with its planted lines inserted (later lines first, so every `at` is as written)."""
    texts: dict[str, str] = {}
    for name in sorted({c.corpus for c in cases}):
        lines = gzip.decompress((DATA / f"{name}.gz").read_bytes()).decode().split("\n")
        for case in sorted((c for c in cases if c.corpus == name and c.plant), key=lambda c: -(c.at or 0)):
            assert case.at is not None and case.plant is not None
            lines.insert(case.at - 1, case.plant)
        texts[name] = "\n".join(lines)
    return texts


def answer_lines(text: str, answer: str | list[str]) -> set[int]:
    wanted = [answer] if isinstance(answer, str) else answer
    return {i for i, line in enumerate(text.split("\n"), 1) if any(a in line for a in wanted)}


@dataclass(frozen=True)
class Passage:
    handle: str
    start_line: int
    end_line: int


Ask = Callable[[str, str | None], Awaitable[list[Passage]]]  # (question, handle or None) -> passages, best first


@dataclass
class Score:
    answered: int = 0
    asked: int = 0
    misses: list[str] | None = None

    @property
    def share(self) -> float:
        return self.answered / self.asked if self.asked else 0.0


async def score(cases: list[Case], texts: dict[str, str], handles: dict[str, str], ask: Ask, *, across: bool) -> Score:
    """How many questions get their answer in the top 3 (across the session, or within their own output)."""
    result = Score(misses=[])
    for case in cases:
        lines = answer_lines(texts[case.corpus], case.answer)
        assert lines, f"answer {case.answer!r} is not in {case.corpus}"
        handle = handles[case.corpus]
        top = (await ask(case.question, None if across else handle))[:TOP]
        hit = any(p.handle == handle and any(p.start_line <= n <= p.end_line for n in lines) for p in top)
        result.asked += 1
        result.answered += hit
        if not hit:
            assert result.misses is not None
            result.misses.append(f"{case.corpus}: {case.question}")
    return result


async def score_in_services(services: Services) -> tuple[Score, Score]:
    """The whole relevance set offloaded into a new session of `services` and asked through `outputs.search`:
    (across the session, within each answer's own output)."""
    scope = outputs.SessionScope.new()
    cases = load_cases()
    texts = corpora(cases)
    handles = {name: (await outputs.offload(services, scope, text, name=name)).handle for name, text in texts.items()}

    async def ask(question: str, handle: str | None) -> list[Passage]:
        out = await outputs.search(services, scope, question, handle=handle, ranked=True, max_results=TOP)
        assert out.passages is not None
        return [Passage(p.handle, p.start_line, p.end_line) for p in out.passages]

    assert len(cases) >= 40
    return await score(cases, texts, handles, ask, across=True), await score(cases, texts, handles, ask, across=False)
