"""Older turns → one stored transcript, and the message that stands for them.

The transcript is the turns' messages exactly as the API takes them, one JSON object per line (JSON Lines), so
`query_large_output` (jq) and `search_large_output` work on it and nothing is lost. The message that replaces the
turns says which messages it stands for and carries either the transcript's reference + preview, or — when the
caller gives a `summarize(text) -> str` callback (their own LLM call) — that summary plus the handle, so the model
can still search or read what the summary left out. The callback gets a readable rendering (`[index] role: text`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence

from mcp_offload.apis.message import Message, MessageView
from mcp_offload.core.render import render_reference, retrieve_hint
from mcp_offload.core.results import OffloadOutput

NOTE_PREFIX = "[Earlier conversation: messages "
Summarize = Callable[[str], str] | Callable[[str], Awaitable[str]]


def transcript_text(messages: Sequence[Message]) -> str:
    """The stored form: one message per line, exactly as given."""
    return "".join(json.dumps(m, ensure_ascii=False, separators=(",", ":")) + "\n" for m in messages)


def readable_text(views: Sequence[MessageView], first_index: int) -> str:
    """What `summarize` reads: `[index] role: text`, one message after another."""
    return "\n\n".join(f"[{first_index + i}] {v.role}: {v.text}" for i, v in enumerate(views))


def note_text(first: int, last: int, stored: OffloadOutput, summary: str | None) -> str:
    """The text of the message that replaces messages `first`..`last`."""
    head = f"{NOTE_PREFIX}{first}–{last} ({last - first + 1} messages) are stored as {stored.handle}"
    if summary is not None:
        return (
            f"{head}, one JSON message per line. Summary:\n{summary.strip()}\n"
            f"The summary leaves details out: find them in {stored.handle}. {retrieve_hint(stored)}"
        )
    return f"{head}, one JSON message per line.]\n{render_reference(stored)}"


async def run_summarize(summarize: Summarize, text: str) -> str:
    result = summarize(text)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, str):
        raise TypeError(f"summarize returned {type(result).__name__}, not str")
    return result
