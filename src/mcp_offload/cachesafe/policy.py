"""What a caller of the cache-safe rewrite chooses: `RewritePolicy` (the threshold, retrieval mode, the window and
cost rules, fail-closed), `ClearToolUses` (window pressure, as Anthropic's clear_tool_uses), `Pressure` (window
pressure a caller measured itself)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ClearToolUses:
    """Window pressure, as Anthropic's `clear_tool_uses_20250919` (same parameter names), but lossless: over
    `trigger` input tokens, results are stored and referenced instead of cleared."""

    trigger_tokens: int = 100_000  # `trigger` (input_tokens)
    keep_tool_uses: int = 3  # `keep` (tool_uses)
    clear_at_least_tokens: int = 20_000  # `clear_at_least` (input_tokens)
    exclude_tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RewritePolicy:
    threshold_tokens: int = 1_000  # tool results at/over this (when new) are offloaded
    retrieval: Literal["transparent", "visible"] = "transparent"
    clear_tool_uses: ClearToolUses | None = ClearToolUses()  # window pressure rule
    cost_rule: bool = True  # rewrite the cached prefix only when it pays at the provider's prices
    offload_user_pastes_tokens: int | None = None  # user texts this large (not the last turn) join the prefix rules
    batch_tokens: int | None = None  # the least a cost-rule batch clears (None: clear_tool_uses.clear_at_least_tokens)
    fail_closed: bool = False


@dataclass(frozen=True, slots=True)
class Pressure:
    """Window pressure the caller measured itself (the `Compactor`, which counts the whole request exactly): offload
    inline parts of at least `floor_tokens` (in `eligible`), oldest first, until about `clear_tokens` are cleared
    (each part counts its tokens less a reference's, `preview_tokens`). `count` measures a part (default: the
    4-chars-a-token estimate). Recorded with reason "pressure", then sticky like every decision."""

    floor_tokens: int
    clear_tokens: int
    count: Callable[[str], int] | None = None
