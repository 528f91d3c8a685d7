"""bench/gateway.py's lossy baselines, as request transforms: where each tool result's text sits in a history (per
API), clear-old (every result but the last few replaced by a placeholder) and a naive compressor (every result cut
to share a fixed budget, each turn)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from typing import Any

from bench import gateway_gemini as gemini
from llm_upstream.errors import ApiKind

KEEP_RECENT = 3  # clear-old keeps this many results


NAIVE_BUDGET_CHARS = 80_000  # naive: all tool results share this many characters


def result_slots(api: ApiKind, history: list[dict[str, Any]]) -> Iterator[tuple[int, int | None]]:
    """(message index, block index or None) of every tool result's text, oldest first."""
    if api == "gemini":
        yield from gemini.result_slots(history)
        return
    for i, msg in enumerate(history):
        if api == "anthropic" and msg.get("role") == "user" and isinstance(msg["content"], list):
            for j, block in enumerate(msg["content"]):
                if block.get("type") == "tool_result":
                    yield i, j
        elif (api == "openai_chat" and msg.get("role") == "tool") or msg.get("type") == "function_call_output":
            yield i, None


def count_results(api: ApiKind, history: list[dict[str, Any]]) -> int:
    return sum(1 for _ in result_slots(api, history))


def transform_results(
    api: ApiKind, history: list[dict[str, Any]], rewrite: Callable[[int, int, str], str]
) -> list[dict[str, Any]]:
    """A copy of `history` with each tool result's text replaced by `rewrite(position, count, text)`."""
    out = list(history)
    slots = list(result_slots(api, history))
    for position, (i, j) in enumerate(slots):
        if api == "gemini" and j is not None:
            out[i] = gemini.replace_result(out[i], j, functools.partial(rewrite, position, len(slots)))
            continue
        msg = out[i] = copy.copy(out[i])
        if j is None:
            field_name = "content" if api == "openai_chat" else "output"
            msg[field_name] = rewrite(position, len(slots), msg[field_name])
        else:
            msg["content"] = list(msg["content"])
            block = msg["content"][j] = dict(msg["content"][j])
            block["content"] = rewrite(position, len(slots), block["content"])
    return out


def clear_old(position: int, count: int, text: str) -> str:
    return text if position >= count - KEEP_RECENT else "[old tool result cleared to save context]"


def naive_compressor(count: int) -> Callable[[int, int, str], str]:
    share = max(400, NAIVE_BUDGET_CHARS // max(count, 1))

    def cut(position: int, count: int, text: str) -> str:
        if len(text) <= share:
            return text
        half = share // 2
        return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"

    return cut
