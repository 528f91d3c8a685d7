"""An API call through the gateway: the request parsed, rewritten (`rewrite_request`), sent upstream (retried once
unmodified when the upstream refuses the rewrite), and answered: JSON or a stream, through the retrieval loop when the
turn may loop (loop.py).

Per call, in order: content type and JSON checked, `rewrite_request` (store down: the original goes out, counted as
fail-open, unless the policy is fail-closed: 503), the upstream call (prepared by the provider). When the rewrite
changed nothing the client's original bytes are sent. A 4xx to a rewritten request (other than auth, rate limit and
timeout) is retried once with the original bytes; if that one passes, the session is marked to bypass rewriting from
now on (in the record, so every instance sees it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx2
import orjson
from starlette.types import Message, Send

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Dialect
from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.request_rewrite import Rewrite, RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.session import derive_session
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES
from mcp_offload.core.services import Services
from mcp_offload.errors import StoreError
from mcp_offload.gateway.asgi import send_bytes
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.gateway.exchange import Exchange
from mcp_offload.gateway.loop import loop_json, loop_stream, relay_stream
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.gateway.relay import relay
from mcp_offload.gateway.request_body import ClientGone, parse_json
from mcp_offload.gateway.session_retriever import SessionRetriever
from mcp_offload.gateway.upstream import ProviderClient, request_headers, response_headers
from mcp_offload.providers.base import ApiCall, IncomingRequest, Provider
from mcp_offload.providers.framing import Framing

log = logging.getLogger("mcp_offload.gateway")

NO_RETRY = frozenset({401, 403, 408, 429})  # refusals about who or how often, not about the request's content


class ApiTurns:
    """The API calls of one gateway: its services, options and upstream client; `fail_open_events` since start."""

    def __init__(self, services: Services, options: GatewayOptions, upstream: ProviderClient) -> None:
        self.services = services
        self.options = options
        self.upstream = upstream
        self.fail_open_events = 0

    async def run(
        self,
        provider: Provider,
        call: ApiCall,
        incoming: IncomingRequest,
        headers: list[tuple[str, str]],
        raw: bytes,
        send: Send,
        exchange: Exchange,
    ) -> None:
        await self._api(provider, call, incoming, headers, raw, send, exchange)

    async def _api(
        self,
        provider: Provider,
        call: ApiCall,
        incoming: IncomingRequest,
        headers: list[tuple[str, str]],
        raw: bytes,
        send: Send,
        exchange: Exchange,
    ) -> None:
        api = call.api
        try:
            request = parse_json(incoming.headers, raw)
        except GatewayError:
            if not api.relays_unreadable:
                raise
            exchange.api = None  # a request the gateway cannot read: relayed, the upstream answers it
            await relay(self.upstream, incoming, headers, raw, send, exchange, provider)
            return
        exchange.stream = call.stream if call.stream is not None else request.get("stream") is True
        exchange.model = call.model if call.model is not None else str(request.get("model") or "")
        rewrite = await self._rewrite(api, provider, request, provider.session_headers(incoming), exchange)
        may_loop = (
            rewrite is not None
            and rewrite.tools_injected
            and self.options.policy.retrieval == "transparent"
            and api.single_choice(request)
        )
        upstream_body = rewrite.body if rewrite is not None else request
        client_usage = True
        asking = api.asking_stream_usage(request, upstream_body) if may_loop and exchange.stream else None
        if asking is not None:
            # the accounting needs the upstream's usage (cached_tokens) for a turn the gateway rewrites anyway;
            # the spliced stream drops the usage chunk this client did not ask for
            upstream_body, client_usage = asking, False
        bypassed = rewrite is not None and rewrite.bypassed
        if self.services.settings.gateway_cache_breakpoints and not bypassed:
            upstream_body = api.with_cache_breakpoints(upstream_body)  # a client that marks nothing gets prompt caching
        changed = upstream_body is not request
        sent = orjson.dumps(upstream_body) if changed else raw
        path = call.upstream_path or incoming.path
        as_array = may_loop and call.whole_path is not None and call.sse_query not in parse_qsl(incoming.query)
        if as_array:  # a JSON-array stream (Gemini without alt=sse): one whole call, answered as a 1-item array
            path, exchange.stream = call.whole_path or path, False
        url = self.upstream.url(provider, path, incoming.query)
        out_headers = request_headers(headers, decoded=True)

        async def open_call(body: dict[str, Any]) -> httpx2.Response:
            return await self.upstream.open("POST", url, out_headers, orjson.dumps(body), provider=provider)

        response = await self.upstream.open("POST", url, out_headers, sent, provider=provider)
        if rewrite is not None and changed and 400 <= response.status_code < 500:
            response = await self._retry_original(response, provider, url, out_headers, raw, rewrite, exchange)
        exchange.status = response.status_code
        dialect = api.dialect
        loop_on = may_loop and not exchange.bypassed and response.status_code == 200
        retriever = None if rewrite is None else SessionRetriever(self.services, rewrite.session, api, exchange.arrived)
        content_type = response.headers.get("content-type", "")
        if exchange.stream and response.status_code == 200 and content_type.startswith(call.framing.media_type):
            looping = retriever if loop_on else None
            await self._stream(
                dialect, call.framing, upstream_body, response, open_call, looping, client_usage, send, exchange
            )
            return
        try:
            answer = await response.aread()
        finally:
            await response.aclose()
        headers_out = response_headers(response.headers, decoded=True)
        if response.status_code == 200 and content_type.startswith("application/json"):
            try:
                parsed = orjson.loads(answer)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                if loop_on and retriever is not None:
                    status, answer = await loop_json(
                        dialect,
                        upstream_body,
                        parsed,
                        open_call,
                        retriever,
                        RETRIEVAL_TOOL_NAMES,
                        self.options.limits,
                        exchange.report,
                    )
                    exchange.status = status
                else:
                    exchange.report.usage = dialect.usage_of(parsed)
        if as_array and exchange.status == 200:
            answer = b"[" + answer + b"]"
        await send_bytes(send, exchange.status, headers_out, answer)

    async def _stream(
        self,
        dialect: Dialect,
        framing: Framing,
        request: dict[str, Any],
        response: httpx2.Response,
        open_call: Callable[[dict[str, Any]], Awaitable[httpx2.Response]],
        retriever: SessionRetriever | None,
        client_usage: bool,
        send: Send,
        exchange: Exchange,
    ) -> None:
        lock = anyio.Lock()

        async def emit(chunk: bytes) -> None:
            async with lock:
                try:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                except OSError:
                    raise ClientGone from None

        try:
            start: Message = {
                "type": "http.response.start",
                "status": 200,
                "headers": response_headers(response.headers, decoded=True),
            }
            await send(start)
        except BaseException:
            await response.aclose()
            raise
        if retriever is not None:
            await loop_stream(
                dialect,
                request,
                response,
                open_call,
                retriever,
                RETRIEVAL_TOOL_NAMES,
                self.options.limits,
                exchange.report,
                emit,
                client_usage=client_usage,
                framing=framing,
            )
        else:
            await relay_stream(dialect, response, emit, exchange.report, framing=framing)
        async with lock:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _rewrite(
        self,
        api: LlmApi,
        provider: Provider,
        request: dict[str, Any],
        headers: Mapping[str, str],
        exchange: Exchange,
    ) -> Rewrite | None:
        """The rewritten request; None when the gateway must send the original (fail-open)."""
        policy = self.options.policy
        try:
            rewrite = await rewrite_request(
                self.services, api, request, headers, policy, model=exchange.model, provider=provider
            )
        except RewriteUnavailable as exc:
            raise GatewayError(
                503,
                "store_unavailable",
                f"The gateway's store is unavailable ({exc.reason}) and it is set to fail closed; retry later.",
            ) from None
        except StoreError as exc:
            if policy.fail_closed:
                raise GatewayError(503, "store_unavailable", f"The gateway's store is unavailable: {exc}") from None
            exchange.fail_open = f"{type(exc).__name__}: {exc}"
            exchange.session = derive_session(api, request, headers)
            log.warning("store unavailable, forwarding the original request (fail-open): %s", exc)
            self.fail_open_events += 1
            return None
        exchange.rewrite = rewrite
        exchange.session = rewrite.session
        exchange.fail_open = rewrite.fail_open  # rewrite_request logged it
        self.fail_open_events += exchange.fail_open is not None
        return rewrite

    async def _retry_original(
        self,
        refused: httpx2.Response,
        provider: Provider,
        url: str,
        headers: list[tuple[str, str]],
        raw: bytes,
        rewrite: Rewrite,
        exchange: Exchange,
    ) -> httpx2.Response:
        """A 4xx to the rewritten request: try the client's original once; mark the session if that passes."""
        if refused.status_code in NO_RETRY:
            return refused
        detail = (await refused.aread()).decode("utf-8", "replace")[:300]
        await refused.aclose()
        original = await self.upstream.open("POST", url, headers, raw, provider=provider)
        if original.status_code < 400:
            exchange.bypassed = True
            reason = f"upstream refused a rewritten request ({refused.status_code}): {detail}"
            log.warning("session %s bypassed: %s", rewrite.session.key[:12], reason)
            try:
                await open_record(self.services).mark_bypass(rewrite.session, reason)
            except StoreError as exc:
                log.warning("could not record the bypass: %s", exc)
        return original
