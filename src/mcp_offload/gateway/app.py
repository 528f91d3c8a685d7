"""The gateway's ASGI app: the LLM APIs of `mcp_offload.apis` rewritten and looped, everything else relayed untouched.

    POST /v1/messages[?beta=true]   Anthropic Messages      rewrite_request, then the retrieval loop
    POST /v1/chat/completions       OpenAI Chat Completions (same)
    POST /v1/responses              OpenAI Responses        (same)
    POST /{v1beta|v1}/models/{model}:generateContent, :streamGenerateContent?alt=sse
                                    Gemini                  (same; providers.gemini.routes tells them from OpenAI's)
    (each provider's routes)        its APIs                (same: `providers.registry.call_for_request`)
    GET  /healthz                   ready (no token needed)
    GET  /stats, GET /              the gateway's figures (JSON, HTML): per session and in total, cost vs direct
    anything else                   relayed as is (/v1/messages/count_tokens, /v1/models, ...), streams streamed

Per request, in order: the gateway's own token (`x-mcp-offload-token: T` or `Proxy-Authorization: Bearer T`;
`Authorization` and `x-api-key` belong to the provider and pass through), the Host/Origin check, the body (capped,
read once), then for an API call: content type and JSON checked, `rewrite_request` (store down: the original
goes out, counted as fail-open, unless the policy is fail-closed: 503), the upstream call. When the rewrite
changed nothing the client's original bytes are sent. A 4xx to a rewritten request (other than auth, rate limit
and timeout) is retried once with the original bytes; if that one passes, the session is marked to bypass
rewriting from now on (in the record, so every instance sees it).

Every failure the gateway answers itself is in the provider's error format for the API (errors.py). If the client
goes away, the handler is cancelled, which closes the upstream response, so the upstream sees the disconnect at once.

Logs: one JSON line per request on `mcp_offload.gateway` (INFO): api, status, ms, stream, rewrite figures, loops,
retrieval calls, upstream cache figures, session fingerprint. Credentials never appear.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx2
import orjson
from starlette.types import Message, Receive, Scope, Send

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Dialect
from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.request_rewrite import Rewrite, RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.session import derive_session
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES
from mcp_offload.core.services import Services
from mcp_offload.errors import StoreError
from mcp_offload.gateway.access import GatewayAccess
from mcp_offload.gateway.asgi import lifespan, query_string, send_bytes
from mcp_offload.gateway.compress_api import CompressApi, is_compress_path
from mcp_offload.gateway.errors import GatewayError, error_response
from mcp_offload.gateway.exchange import Exchange, account_exchange, log_exchange, noting_completion, watch_disconnect
from mcp_offload.gateway.loop import loop_json, loop_stream, relay_stream
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.gateway.request_body import ClientGone, parse_json, read_body
from mcp_offload.gateway.session_retriever import SessionRetriever
from mcp_offload.gateway.status import gateway_stats, render_page
from mcp_offload.gateway.upstream import ProviderClient, request_headers, response_headers
from mcp_offload.providers.base import ApiCall, IncomingRequest, Provider
from mcp_offload.providers.framing import Framing
from mcp_offload.providers.registry import call_for_request, relay_provider
from mcp_offload.version import __version__

log = logging.getLogger("mcp_offload.gateway")

NO_RETRY = frozenset({401, 403, 408, 429})  # refusals about who or how often, not about the request's content
JSON_HEADERS = [(b"content-type", b"application/json")]


class GatewayApp:
    """The ASGI app. Owns the upstream client (closed by `aclose`), not the services."""

    def __init__(self, services: Services, options: GatewayOptions, *, upstream: ProviderClient | None = None) -> None:
        self.services = services
        self.options = options
        self.upstream = upstream or ProviderClient(options.upstream)
        self.draining = False
        self.fail_open_events = 0  # since start (also on /healthz)
        self.access = GatewayAccess(options.tokens, options.allowed_hosts, options.allowed_origins)
        self.compress_api = CompressApi(services, options.policy, self.access.refusal)  # Headroom's contract

    async def aclose(self) -> None:
        await self.upstream.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", ())]
        header_map = dict(headers)
        incoming = IncomingRequest(method, path, query_string(scope), header_map)
        served = call_for_request(incoming)
        api = served[1].api if served else None
        # the provider whose error document a failure gets (a relayed path: the one it goes to)
        answering = served[0] if served else relay_provider(incoming)
        if path == "/healthz" and method == "GET":
            status = 503 if self.draining else 200
            body = {
                "status": "draining" if self.draining else "ok",
                "version": __version__,
                "service": "gateway",
                "fail_open_events": self.fail_open_events,
            }
            await send_bytes(send, status, JSON_HEADERS, orjson.dumps(body))
            return
        if is_compress_path(path):  # its own token rule (Authorization: Bearer too) and error format
            await self._compress(method, path, scope, receive, send, header_map)
            return
        refusal = self.access.refusal(header_map)
        if refusal is not None:
            await send_bytes(send, *error_response(answering, api, refusal))
            return
        if method == "GET" and path in ("/", "/stats"):  # the gateway's own figures (not provider paths)
            await self._status(path, send)
            return
        started = time.perf_counter()
        exchange = Exchange(api=api, provider=served[0] if served else None)
        send = noting_completion(send, exchange)

        async def work() -> None:
            failure: Exception | None = None
            try:
                body = await read_body(receive, header_map, self.options.max_body_bytes)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watch_disconnect, receive, tg.cancel_scope, exchange)
                    try:
                        if served is not None:
                            await self._api(*served, scope, headers, header_map, body, send, exchange)
                        else:
                            await self._relay(method, path, scope, headers, body, send, exchange)
                    except (GatewayError, ClientGone) as exc:  # raised out of the task group they would be grouped
                        failure = exc
                    tg.cancel_scope.cancel()
                if failure is not None:
                    raise failure
            except GatewayError as exc:
                exchange.status = exc.status
                await send_bytes(send, *error_response(answering, api, exc))
            except ClientGone:
                exchange.report.problem = "client disconnected"

        try:
            await work()
        finally:
            with anyio.CancelScope(shield=True):
                await account_exchange(self.services, exchange)
            log_exchange(method, path, exchange, started)

    async def _compress(
        self, method: str, path: str, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        try:
            body = await read_body(receive, headers, self.options.max_body_bytes)
        except GatewayError as exc:
            status, answer = exc.status, {"error": {"code": exc.code, "message": exc.message}}
        except ClientGone:
            return
        else:
            status, answer = await self.compress_api.respond(method, path, query_string(scope), headers, body)
        await send_bytes(send, status, JSON_HEADERS, orjson.dumps(answer))

    async def _status(self, path: str, send: Send) -> None:
        try:
            stats = await gateway_stats(self.services)
        except StoreError as exc:
            error = {"code": "store_unavailable", "message": f"The gateway's store is unavailable: {exc}"}
            await send_bytes(send, 503, JSON_HEADERS, orjson.dumps({"error": error}))  # the gateway's own document
            return
        if path == "/stats":
            await send_bytes(send, 200, JSON_HEADERS, orjson.dumps(stats))
        else:
            page = render_page(stats).encode()
            await send_bytes(send, 200, [(b"content-type", b"text/html; charset=utf-8")], page)

    async def _relay(
        self,
        method: str,
        path: str,
        scope: Scope,
        headers: list[tuple[str, str]],
        body: bytes,
        send: Send,
        exchange: Exchange,
        provider: Provider | None = None,
    ) -> None:
        """Anything that is not one of the APIs (or a body the API relays unread: to `provider`): relayed byte for
        byte, response streamed."""
        query = query_string(scope)
        provider = provider or relay_provider(IncomingRequest(method, path, query, dict(headers)))
        url = self.upstream.url(provider, path, query)
        out_headers = request_headers(headers, decoded=False)
        response = await self.upstream.open(method, url, out_headers, body or None, provider=provider)
        exchange.status = response.status_code
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": response_headers(response.headers, decoded=False),
                }
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except httpx2.HTTPError:
            exchange.report.problem = "upstream stream cut"
        finally:
            await response.aclose()

    async def _api(
        self,
        provider: Provider,
        call: ApiCall,
        scope: Scope,
        headers: list[tuple[str, str]],
        header_map: dict[str, str],
        raw: bytes,
        send: Send,
        exchange: Exchange,
    ) -> None:
        api = call.api
        try:
            request = parse_json(header_map, raw)
        except GatewayError:
            if not api.relays_unreadable:
                raise
            exchange.api = None  # a request the gateway cannot read: relayed, the upstream answers it
            await self._relay("POST", scope["path"], scope, headers, raw, send, exchange, provider)
            return
        exchange.stream = call.stream if call.stream is not None else request.get("stream") is True
        exchange.model = call.model if call.model is not None else str(request.get("model") or "")
        incoming = IncomingRequest("POST", scope["path"], query_string(scope), header_map)
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
        path = call.upstream_path or scope["path"]
        as_array = may_loop and call.whole_path is not None and call.sse_query not in parse_qsl(query_string(scope))
        if as_array:  # a JSON-array stream (Gemini without alt=sse): one whole call, answered as a 1-item array
            path, exchange.stream = call.whole_path or path, False
        url = self.upstream.url(provider, path, query_string(scope))
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


__all__ = ["GatewayApp"]
