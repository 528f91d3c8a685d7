"""Rewrite one LLM API request cache-safely: large new tool results become references, the rest stays byte-identical.

    rewrite = await rewrite_request(services, "anthropic", body, headers, GatewayPolicy())
    send(rewrite.body)          # the same object as `body` when rewrite.changed is False

Skeleton: the final interface with identity behaviour; the rules land in the next commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_offload.gateway.session import GatewaySession, derive_session
from mcp_offload.gateway.tool_text import ApiKind
from mcp_offload.services import Services

__all__ = ["ApiKind", "ClearToolUses", "GatewayPolicy", "Rewrite", "RewriteUnavailable", "rewrite_request"]


@dataclass(frozen=True, slots=True)
class ClearToolUses:
    """Window pressure, as Anthropic's `clear_tool_uses_20250919` (same parameter names), but lossless."""

    trigger_tokens: int = 100_000
    keep_tool_uses: int = 3
    clear_at_least_tokens: int = 20_000
    exclude_tools: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GatewayPolicy:
    threshold_tokens: int = 1_000
    retrieval: Literal["transparent", "visible"] = "transparent"
    clear_tool_uses: ClearToolUses | None = ClearToolUses()
    cost_rule: bool = True
    offload_user_pastes_tokens: int | None = None
    fail_closed: bool = False


@dataclass(slots=True)
class Rewrite:
    body: dict[str, Any]
    changed: bool
    session: GatewaySession
    tools_injected: bool = False
    offloaded: list[str] = field(default_factory=list)
    tokens_kept_out: int = 0
    fail_open: str | None = None


class RewriteUnavailable(Exception):
    """The store is down and the policy is fail-closed: the request must be answered with an API error (503)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def rewrite_request(
    services: Services, api: ApiKind, body: dict[str, Any], headers: Mapping[str, str], policy: GatewayPolicy
) -> Rewrite:
    session = derive_session(api, body, headers)
    return Rewrite(body=body, changed=False, session=session)
