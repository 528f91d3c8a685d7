"""Answers that fit the calling client's cap (`answer_cap.py`), each cut one ending with the exact call that
continues it.

- A read is cut by the read itself (`read_range(max_bytes=…, max_tokens=…)`) and continues on the same output:
  following the continuations rebuilds the range exactly.
- Any other answer (a search, a query, a list) that does not fit is stored whole as an output of the session (under
  a handle derived from its text, so asking again stores nothing new), and the client is shown its longest prefix
  that fits, cut at a line end (a search: at the end of a hit, so it shows fewer hits), then the exact read call
  that continues it.
- An offload's answer (the reference and preview) keeps its first lines and points at the output itself.

With no client cap (`UNCAPPED`) every answer is as before: reads cut at `settings.read_max_tokens`, searches at
`max_results`, queries at `jq_max_output_chars`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import TypeVar

from mcp_offload.core import outputs
from mcp_offload.core.answer_cap import AnswerCap
from mcp_offload.core.render import n, read_call, render_read, render_reference, search_layout
from mcp_offload.core.results import OffloadOutput, ReadOutput, SearchOutput
from mcp_offload.core.services import Services
from mcp_offload.errors import OffloadError
from mcp_offload.store.handles import derived_handle

# Room kept for a read's header and continuation line when first sizing its text (the loop corrects the rest).
_READ_FRAME_BYTES = 400
_READ_FRAME_TOKENS = 120
_FIT_ROUNDS = 8
T = TypeVar("T")


async def fitted_read(
    services: Services,
    scope: outputs.SessionScope,
    handle: str,
    cap: AnswerCap,
    *,
    start: int | None = None,
    end: int | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
) -> tuple[str, ReadOutput]:
    """The read and its text, cut to fit `cap` as well as the read token cap."""
    settings, counter = services.settings, services.tokens
    label = cap.label() if cap.limited else f"the {n(settings.read_max_tokens)}-token cap"
    max_tokens = None if cap.max_tokens is None else max(cap.max_tokens - _READ_FRAME_TOKENS, 1)
    max_bytes = None if cap.max_bytes is None else max(cap.max_bytes - _READ_FRAME_BYTES, 1)
    for _ in range(_FIT_ROUNDS):
        out = await outputs.read(
            services,
            scope,
            handle,
            start=start,
            end=end,
            start_line=start_line,
            end_line=end_line,
            max_tokens=max_tokens,
            max_bytes=max_bytes,
        )
        text = render_read(out, label)
        over = cap.excess_bytes(text, counter)
        if not over:
            break
        max_bytes = max(len(out.text.encode("utf-8", "surrogatepass")) - over, 1)
    return text, out


async def fitted_search(
    services: Services, scope: outputs.SessionScope, out: SearchOutput, scoped: str | None, cap: AnswerCap
) -> str:
    """A search answer showing as many whole hits as fit, and how to read the rest."""
    layout = search_layout(out, scoped)
    blocks = [lines for lines, _ in layout]
    text = "\n".join(line for block in blocks for line in block)
    if not cap.limited or cap.fits(text, services.tokens):
        return text
    sizes = [sum(line.count("\n") + 1 for line in block) for block in blocks]
    ends = list(itertools.accumulate(sizes))
    shown = list(itertools.accumulate(hits for _, hits in layout))
    hits = len(out.matches)
    # after the header and after each block of hits (one hit; scope="record": a record's): "3 of 200 hits"
    last = max((i for i, (_, count) in enumerate(layout) if count), default=0)
    cuts = [(ends[i], f"{shown[i]} of {n(hits)} hits") for i in range(last + 1)]
    return await fitted_text(services, scope, text, cap, "search answer", cuts=cuts)


async def fitted_text(
    services: Services,
    scope: outputs.SessionScope,
    text: str,
    cap: AnswerCap,
    what: str,
    *,
    cuts: Sequence[tuple[int, str]] | None = None,
) -> str:
    """`text` if it fits `cap`; else its longest prefix that fits, cut after one of `cuts` (line count, what it
    shows) or, when none fits, after any line or at a character, with the exact call that reads the rest of the
    whole text, stored as an output."""
    counter = services.tokens
    if not cap.limited or cap.fits(text, counter):
        return text
    lines = _lines(text)
    try:
        stored = await outputs.offload(
            services, scope, text, name=what, source="answer", handle=derived_handle(scope.key, "answer", text)
        )
    except OffloadError as exc:  # the store refused it (full, down): the part that fits, and why no more
        note = f"[{what} cut at {cap.label()}; the rest could not be stored ({exc}): narrow the request]"
        count = _longest(range(1, len(lines)), lambda k: cap.fits("".join(lines[:k]) + note, counter))
        return "".join(lines[: count or 0]) + note
    total = stored.lines

    def shown_at(count: int, shows: str) -> str:
        call = read_call(stored.handle, "lines", count + 1, total)
        hint = (
            f"[{what} cut at {cap.label()} after {shows}; the whole answer is stored as {stored.handle}: "
            f"continue with {call}]"
        )
        return "".join(lines[:count]) + hint

    given = [(count, shows) for count, shows in cuts or () if 0 < count < total]
    every_line = [(count, f"{n(count)} of {n(total)} lines") for count in range(1, total)]
    for group in (given, every_line):
        best = _longest(group, lambda cut: cap.fits(shown_at(*cut), counter))
        if best is not None:
            return shown_at(*best)

    # not one line fits (a one-line JSON, a huge header): cut inside the text, continue by characters
    def shown_chars(count: int) -> str:
        call = read_call(stored.handle, "chars", count + 1, stored.chars)
        hint = (
            f"[{what} cut at {cap.label()} after {n(count)} of {n(stored.chars)} characters; the whole answer is "
            f"stored as {stored.handle}: continue with {call}]"
        )
        return text[:count] + "\n" + hint

    chars = _longest(range(1, len(text)), lambda count: cap.fits(shown_chars(count), counter))
    return shown_chars(chars or 1)


def _longest(candidates: Sequence[T], fits: Callable[[T], bool]) -> T | None:
    """The last of `candidates` (in growing order, `fits` true up to some point then false) that fits."""
    low, high = 0, len(candidates)  # candidates[:low] fit, candidates[high:] do not
    while low < high:
        middle = (low + high) // 2
        if fits(candidates[middle]):
            low = middle + 1
        else:
            high = middle
    return candidates[low - 1] if low else None


async def fitted_reference(services: Services, out: OffloadOutput, cap: AnswerCap) -> str:
    """An offload's answer (handle, sizes, preview): its first lines that fit, then where to read the output."""
    text = render_reference(out)
    if not cap.limited or cap.fits(text, services.tokens) or out.kind == "blob":
        return text
    lines = _lines(text)
    call = read_call(out.handle, "lines", 1, out.lines)
    hint = f"[preview cut at {cap.label()}; read the output with {call}]"
    count = _longest(range(1, len(lines)), lambda k: cap.fits("".join(lines[:k]) + hint, services.tokens))
    return "".join(lines[: count or 1]) + hint


def _lines(text: str) -> list[str]:
    """The text's lines as the store counts them: split after each "\\n" only (not at \\r, \\u2028, …)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
