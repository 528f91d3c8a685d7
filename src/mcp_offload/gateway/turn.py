"""One API call through the gateway as one object, `Turn`, and what its three steps share.

A turn holds what was asked (`Asked`: the provider and API call the request is, its request line and headers, its
body as sent and as read), what the gateway sends for it (`Plan`), and what came back (`exchange`: the status, the
upstream's usage, the loop's figures, as the log line and the accounting see them). Three steps run it, one module
each, driven by endpoint.py:

1. plan (plan.py): read the request, rewrite it, and decide what goes upstream;
2. send (send.py): the upstream call, and the one retry with the client's own bytes;
3. answer (answer.py): the client's answer, JSON or a stream, through the retrieval loop (loop.py) when the turn
   may loop.

Every upstream request of a turn (the first, the retry, the loop's follow-ups) goes through `Turn.send`, where the
provider prepares it (`Provider.prepare`: a cloud signs the bytes it is about to send); every stream of a turn is read
and written in the call's framing (`Turn.framing`: SSE for the public APIs, a cloud's own where it frames otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Answer, Dialect, ModelToolCall
from mcp_offload.cachesafe.request_rewrite import Rewrite
from mcp_offload.core.services import Services
from mcp_offload.gateway.admission import BigTurns
from mcp_offload.gateway.exchange import Exchange
from mcp_offload.gateway.options import GatewayOptions, LoopLimits
from mcp_offload.gateway.upstream import ProviderClient
from mcp_offload.providers.base import ApiCall, IncomingRequest, Provider
from mcp_offload.providers.framing import Framing


@dataclass(slots=True)
class TurnContext:
    """What every turn of one gateway uses: its services, options and upstream client, the big turns in progress
    (admission.py), and the fail-open events since it started (on /healthz)."""

    services: Services
    options: GatewayOptions
    client: ProviderClient
    big_turns: BigTurns
    fail_open_events: int = 0


@dataclass(frozen=True, slots=True)
class Asked:
    """What the client asked: the provider and API call its request is, the request as it came, its body read."""

    provider: Provider
    call: ApiCall
    incoming: IncomingRequest
    headers: list[tuple[str, str]]  # names lower-case, in order, repeats kept (what a proxy forwards)
    raw: bytes  # the body's bytes
    request: dict[str, Any]  # the body, read

    @property
    def api(self) -> LlmApi:
        return self.call.api


@dataclass(frozen=True, slots=True)
class Plan:
    """What the gateway sends for a turn."""

    rewrite: Rewrite | None  # None: the store failed and the original goes out (fail-open)
    body: dict[str, Any]  # the request upstream: rewritten, asking for the stream's usage, with cache breakpoints
    content: bytes  # its bytes: the client's own when nothing changed
    changed: bool
    may_loop: bool  # the gateway's retrieval tools are in, retrieval is transparent, one answer is asked for
    client_usage: bool  # the client asked for the stream's usage chunk (else the gateway did, and drops it)
    as_array: bool  # Gemini's JSON-array stream, sent as one whole call and answered as a 1-item array
    url: str
    headers: list[tuple[str, str]]  # what goes upstream (a proxy's header rules: upstream.request_headers)


class Retriever(Protocol):
    """The store side of the retrieval loop, bound to one session (session_retriever.py)."""

    async def answer(self, call: ModelToolCall) -> tuple[Answer, int]:
        """The answer to one retrieval call and the tokens it pulls back into the context. Never raises."""
        ...

    async def record_expansion(self, client_message: Any, upstream_messages: list[dict[str, Any]]) -> None: ...


@dataclass(slots=True)
class Turn:
    context: TurnContext
    asked: Asked
    plan: Plan
    exchange: Exchange  # what came back
    retriever: Retriever

    @property
    def dialect(self) -> Dialect:
        return self.asked.api.dialect

    @property
    def framing(self) -> Framing:
        return self.asked.call.framing

    @property
    def limits(self) -> LoopLimits:
        return self.context.options.limits

    @property
    def loops(self) -> bool:
        """The retrieval loop runs on what came back: it may, the session was not bypassed, and the call passed."""
        return self.plan.may_loop and not self.exchange.bypassed and self.exchange.status == 200

    async def send(self, content: bytes) -> httpx2.Response:
        """One upstream request of this turn with `content` as its body, prepared by the provider; the response's
        body is not read yet (the caller reads or streams it, and closes it)."""
        return await self.context.client.open(
            "POST", self.plan.url, self.plan.headers, content, provider=self.asked.provider
        )

    async def follow_up(self, body: dict[str, Any]) -> httpx2.Response:
        """A follow-up call of the retrieval loop."""
        return await self.send(orjson.dumps(body))
