"""The gateway's LLM-exchange endpoint: one ASGI endpoint for the API calls (their route put the provider and the
call in the scope: api_route.py) and for everything relayed (relay.py).

Per request: the body (read once, capped while it streams in: request_body.py); then, while a task watches for the
client going away, the API call, a turn in three steps (turn.py: plan, send, answer), or the relay. If the client
goes away the work is cancelled, which closes the upstream response, so the upstream sees the disconnect at once. A
`GatewayError` is answered in the provider's error document for the API (errors.py). Afterwards, whatever happened,
the turn's figures are added to its session's counters (shielded from the cancellation) and its fields go on the
request's access-log line (`mcp_offload.gateway`). An API call with a big body takes a place among the big turns in
progress first, or is shed with the API's overloaded answer (admission.py).
"""

from __future__ import annotations

import logging
import time

import anyio
from starlette.types import Receive, Scope, Send

from mcp_offload.gateway.admission import PARSE_MIN_BYTES
from mcp_offload.gateway.answer import answer_turn
from mcp_offload.gateway.asgi import header_pairs, incoming_request, send_bytes
from mcp_offload.gateway.errors import GatewayError, answering, error_response
from mcp_offload.gateway.exchange import (
    Exchange,
    account_exchange,
    exchange_fields,
    noting_completion,
    watch_disconnect,
)
from mcp_offload.gateway.plan import plan_turn, read_request
from mcp_offload.gateway.relay import relay
from mcp_offload.gateway.request_body import ClientGone, read_chunks
from mcp_offload.gateway.send import send_turn
from mcp_offload.gateway.turn import Asked, TurnContext
from mcp_offload.providers.base import ApiCall, IncomingRequest, Provider
from mcp_offload.web.access_log import log_fields

log = logging.getLogger("mcp_offload.gateway")  # the access log's logger (app.py)

API_CALL = "mcp_offload.api_call"  # in the scope (set by the API calls' route): (Provider, ApiCall)


def _declared_size(headers: list[tuple[str, str]]) -> int:
    """The body's size its Content-Length declares (0: none, or not a number: the size read decides)."""
    for name, value in headers:
        if name == "content-length":
            return int(value) if value.isdigit() else 0
    return 0


class ExchangeEndpoint:
    def __init__(self, context: TurnContext, max_body_bytes: int) -> None:
        self.context = context
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        incoming = incoming_request(scope)
        headers = header_pairs(scope)
        served: tuple[Provider, ApiCall] | None = scope.get(API_CALL)
        exchange = Exchange(api=served[1].api if served else None, provider=served[0] if served else None)
        send = noting_completion(send, exchange)

        async def work() -> None:
            failure: Exception | None = None
            admitted: float | None = None  # a big turn: when it took its place (admission.py)
            try:
                if served is not None and _declared_size(headers) >= PARSE_MIN_BYTES:
                    admitted = self._admit(*served)  # shed before its body is read
                chunks = await read_chunks(receive, self.max_body_bytes)
                if served is not None and admitted is None and sum(map(len, chunks)) >= PARSE_MIN_BYTES:
                    admitted = self._admit(*served)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_disconnect, receive, tg.cancel_scope, exchange)
                    try:
                        if served is not None:
                            await self._api_call(*served, incoming, headers, chunks, send, exchange)
                        else:
                            body = b"".join(chunks)
                            await relay(self.context.client, incoming, headers, body, send, exchange)
                    except (GatewayError, ClientGone) as exc:  # raised out of the task group they would be grouped
                        failure = exc
                    tg.cancel_scope.cancel()
                if failure is not None:
                    raise failure
            except GatewayError as exc:
                exchange.status = exc.status
                provider, api = (served[0], served[1].api) if served else answering(incoming)
                await send_bytes(send, *error_response(provider, api, exc))
            except ClientGone:
                exchange.report.problem = "client disconnected"
            finally:
                if admitted is not None:
                    self.context.big_turns.leave(admitted)

        try:
            await work()
        finally:
            with anyio.CancelScope(shield=True):
                await account_exchange(self.context.services, exchange)
            if log.isEnabledFor(logging.INFO):
                log_fields(scope).update(exchange_fields(exchange))

    def _admit(self, provider: Provider, call: ApiCall) -> float:
        """A place for a big turn (its time), or `Overloaded` in the provider's overloaded status."""
        big_turns = self.context.big_turns
        if not big_turns.enter():
            raise big_turns.overloaded(provider.overloaded_status(call.api))
        return time.monotonic()

    async def _api_call(
        self,
        provider: Provider,
        call: ApiCall,
        incoming: IncomingRequest,
        headers: list[tuple[str, str]],
        chunks: list[bytes],
        send: Send,
        exchange: Exchange,
    ) -> None:
        request, raw = await read_request(self.context, call, incoming, chunks)
        if request is None:  # a body the API relays unread: the upstream answers it
            exchange.api = None
            await relay(self.context.client, incoming, headers, raw, send, exchange, provider)
            return
        turn = await plan_turn(self.context, Asked(provider, call, incoming, headers, raw, request), exchange)
        response = await send_turn(turn)
        await answer_turn(turn, response, send)
