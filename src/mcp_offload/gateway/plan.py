"""A turn's first step: read the request and decide what goes upstream.

In order: the body must be a JSON object (a body the API relays unread goes to the relay instead: `read_request`
says None); the request is rewritten (`rewrite_request`: big tool results offloaded, the retrieval tools appended;
store down: the original goes out, counted as fail-open, unless the policy is fail-closed: 503); a stream whose usage
the client did not ask for asks for it when the turn may loop (the accounting needs it; the splice drops it again);
a client that marks no prompt-cache breakpoints gets them (`gateway_cache_breakpoints`); the bytes sent are the
client's own when nothing changed. A Gemini JSON-array stream whose turn may loop is sent as one whole call.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qsl

import orjson

from mcp_offload.cachesafe.request_rewrite import Rewrite, RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.session import CacheSafeSession, derive_session
from mcp_offload.errors import StoreError
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.gateway.exchange import Exchange
from mcp_offload.gateway.request_body import Unreadable, parse_json
from mcp_offload.gateway.session_retriever import SessionRetriever
from mcp_offload.gateway.turn import Asked, Plan, Turn, TurnContext
from mcp_offload.gateway.upstream import request_headers
from mcp_offload.providers.base import ApiCall, IncomingRequest

log = logging.getLogger("mcp_offload.gateway")


async def read_request(
    context: TurnContext, call: ApiCall, incoming: IncomingRequest, chunks: list[bytes]
) -> tuple[dict[str, Any] | None, bytes]:
    """The body (as it arrived, in `chunks`) as a JSON object, and its bytes; None for the object when the API relays
    a body it cannot read (`GatewayError` 415/400 otherwise)."""
    try:
        return await parse_json(context.services.ingest, incoming.headers, chunks)
    except Unreadable as exc:
        if not call.api.relays_unreadable:
            raise exc.error from None
        return None, exc.raw


async def plan_turn(context: TurnContext, asked: Asked, exchange: Exchange) -> Turn:
    api, call, incoming, request = asked.api, asked.call, asked.incoming, asked.request
    exchange.stream = call.stream if call.stream is not None else request.get("stream") is True
    exchange.model = call.model if call.model is not None else str(request.get("model") or "")
    rewrite, session = await _rewrite(context, asked, exchange)
    may_loop = (
        rewrite is not None
        and rewrite.tools_injected
        and context.options.policy.retrieval == "transparent"
        and api.single_choice(request)
    )
    body = rewrite.body if rewrite is not None else request
    client_usage = True
    asking = api.asking_stream_usage(request, body) if may_loop and exchange.stream else None
    if asking is not None:
        # the accounting needs the upstream's usage (cached_tokens) for a turn the gateway rewrites anyway;
        # the spliced stream drops the usage chunk this client did not ask for
        body, client_usage = asking, False
    if context.services.settings.gateway_cache_breakpoints and not (rewrite is not None and rewrite.bypassed):
        body = api.with_cache_breakpoints(body)  # a client that marks nothing gets prompt caching
    changed = body is not request
    path = call.upstream_path or incoming.path
    as_array = may_loop and call.whole_path is not None and call.sse_query not in parse_qsl(incoming.query)
    if as_array:  # a JSON-array stream (Gemini without alt=sse): one whole call, answered as a 1-item array
        path, exchange.stream = call.whole_path or path, False
    plan = Plan(
        rewrite=rewrite,
        body=body,
        content=orjson.dumps(body) if changed else asked.raw,
        changed=changed,
        may_loop=may_loop,
        client_usage=client_usage,
        as_array=as_array,
        url=context.client.url(asked.provider, path, incoming.query),
        headers=request_headers(asked.headers, decoded=True),
    )
    retriever = SessionRetriever(context.services, session, api, exchange.arrived)
    return Turn(context, asked, plan, exchange, retriever)


async def _rewrite(context: TurnContext, asked: Asked, exchange: Exchange) -> tuple[Rewrite | None, CacheSafeSession]:
    """The rewritten request and its session; no rewrite when the gateway must send the original (fail-open)."""
    api, provider, request = asked.api, asked.provider, asked.request
    headers = provider.session_headers(asked.incoming)
    policy = context.options.policy
    try:
        rewrite = await rewrite_request(
            context.services, api, request, headers, policy, model=exchange.model, provider=provider
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
        context.fail_open_events += 1
        return None, exchange.session
    exchange.rewrite = rewrite
    exchange.session = rewrite.session
    exchange.fail_open = rewrite.fail_open  # rewrite_request logged it
    context.fail_open_events += exchange.fail_open is not None
    return rewrite, rewrite.session
