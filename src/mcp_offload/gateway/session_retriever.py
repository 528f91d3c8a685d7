"""`SessionRetriever`: the loop's store side for one session, bound to gw-core's `run_retrieval` and
`record_expansion`.

A store failure while recording an expansion is logged and swallowed: the client already has its answer, and a
missing expansion only means later turns send the client's copy of the response (a cache miss, nothing lost).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Answer, ModelToolCall
from mcp_offload.cachesafe.record import arrival_order, record_expansion
from mcp_offload.cachesafe.retrieval import run_retrieval
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.core.services import Services

log = logging.getLogger("mcp_offload.gateway")


class SessionRetriever:
    """The store side for one request; `arrived` orders its expansion (`arrival_order()` when the request came in:
    a retried request's replaces the earlier attempt's, `record_expansion`)."""

    def __init__(self, services: Services, session: CacheSafeSession, api: LlmApi, arrived: int | None = None) -> None:
        self.services, self.session, self.api = services, session, api
        self.arrived = arrival_order() if arrived is None else arrived

    async def answer(self, call: ModelToolCall) -> tuple[Answer, int]:
        try:
            found = await run_retrieval(self.services, self.session, call.name, call.arguments)
        except Exception as exc:  # run_retrieval never raises by contract; a bug must not break the client's turn
            log.exception("retrieval call %s failed", call.name)
            return Answer(call, f"Error: the gateway could not run {call.name}: {type(exc).__name__}.", True), 0
        return Answer(call, found.text, found.is_error), found.tokens

    async def record_expansion(self, client_message: Any, upstream_messages: list[dict[str, Any]]) -> None:
        try:
            await record_expansion(
                self.services, self.session, self.api, client_message, upstream_messages, order=self.arrived
            )
        except Exception as exc:
            log.warning(
                "could not record the retrieval expansion (%s: %s); later turns send the client's copy",
                type(exc).__name__,
                exc,
                extra={"fields": {"session": self.session.key[:12]}},
            )
