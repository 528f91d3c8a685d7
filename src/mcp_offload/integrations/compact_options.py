"""The `compact()` keyword arguments an adapter forwards, typed once for all of them."""

from __future__ import annotations

from typing import TypedDict

from mcp_offload.compact.boundary import Boundary, BoundarySpec
from mcp_offload.compact.transcript import Summarize


class CompactOptions(TypedDict, total=False):
    """Same meaning as `AsyncCompactor.compact`'s keywords (boundary, threshold, budget, summary, cache prices)."""

    boundary: BoundarySpec | Boundary
    threshold_tokens: int
    context_window: int | None
    trigger: float
    summarize: Summarize | None
    model: str | None
