"""Run one of the gateway's retrieval tool calls for a session, as the MCP server would, and never raise.

Skeleton: final signature; the expired-handle wording lands in the next commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_offload.gateway.session import GatewaySession
from mcp_offload.services import Services


@dataclass(frozen=True, slots=True)
class RetrievalAnswer:
    text: str
    is_error: bool
    tokens: int


async def run_retrieval(services: Services, session: GatewaySession, name: str, arguments: Any) -> RetrievalAnswer:
    return RetrievalAnswer(text="not implemented yet", is_error=True, tokens=0)
