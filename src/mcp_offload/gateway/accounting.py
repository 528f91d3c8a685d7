"""Per-session counters (skeleton: final names; filled in next)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_offload.gateway.session import GatewaySession
from mcp_offload.services import Services


@dataclass(frozen=True, slots=True)
class TurnCounters:
    """What one client turn did; every field is added to the session's counters."""

    requests: int = 1
    tokens_kept_out: int = 0  # tool result tokens not sent upstream this turn (the references' size subtracted)
    tokens_pulled_back: int = 0  # tokens of retrieval answers sent upstream
    retrieval_calls: int = 0
    loops: int = 0  # follow-up upstream calls made by the transparent loop
    fail_open: int = 0
    offloaded: int = 0  # outputs newly stored this turn
    input_tokens: int = 0  # upstream usage: uncached input tokens
    cache_read_input_tokens: int = 0  # Anthropic
    cache_creation_input_tokens: int = 0  # Anthropic
    cached_tokens: int = 0  # OpenAI (prompt_tokens_details.cached_tokens / input_tokens_details.cached_tokens)
    output_tokens: int = 0


async def add_usage(services: Services, session: GatewaySession, counters: TurnCounters) -> None:
    return None


async def session_summary(services: Services, session_key: str | None = None) -> dict[str, Any]:
    return {}
