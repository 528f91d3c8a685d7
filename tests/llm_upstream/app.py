"""The ASGI app: the four LLM APIs (+ count_tokens and models), validating, cache-simulating, scripted (Gemini's
routes: gemini_app.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from llm_upstream import emit_anthropic, emit_chat, emit_responses
from llm_upstream.errors import ApiError, ApiKind, InvalidRequest, error_body, request_id
from llm_upstream.gemini_app import gemini_key, gemini_routes, model_list
from llm_upstream.prompt import render_anthropic, render_chat, render_responses
from llm_upstream.script import Reply, Text, Thinking, ToolCall, Turn
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key
from llm_upstream.validate_anthropic import validate_messages_request
from llm_upstream.validate_openai import validate_chat_request, validate_responses_request

MODELS = ["claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5", "gpt-5", "gpt-5-mini", "gpt-4.1"]


class StreamDropped(Exception):
    """Raised inside a stream to cut the connection mid-way (a scripted fault)."""


def build_app(state: UpstreamState) -> Starlette:
    async def messages(request: Request) -> Response:
        return await _handle(state, request, "anthropic")

    async def count_tokens(request: Request) -> Response:
        return await _handle(state, request, "anthropic", count_only=True)

    async def chat(request: Request) -> Response:
        return await _handle(state, request, "openai_chat")

    async def responses(request: Request) -> Response:
        return await _handle(state, request, "responses")

    async def models(request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        state.record(ReceivedRequest(None, request.url.path, headers, None))
        if gemini_key(request):  # Gemini's listing (GET /v1/models?key=… or with x-goog-api-key)
            return JSONResponse(model_list())
        if "anthropic-version" in headers:
            data: list[dict[str, Any]] = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-09-29T00:00:00Z"}
                for m in MODELS
                if m.startswith("claude")
            ]
            return JSONResponse({"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]})
        data = [{"id": m, "object": "model", "created": 1_750_000_000, "owned_by": "llm-upstream"} for m in MODELS]
        return JSONResponse({"object": "list", "data": data})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def log(request: Request) -> Response:
        """What a test or bench in another process needs: one summary per request received (no bodies)."""
        return JSONResponse([summary(r) for r in state.received()])

    return Starlette(
        routes=[
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/_upstream/requests", log, methods=["GET"]),
            *gemini_routes(state),
        ]
    )


def summary(entry: ReceivedRequest) -> dict[str, Any]:
    usage = entry.usage
    return {
        "api": entry.api, "path": entry.path, "status": entry.status, "error": entry.error, "session": entry.session,
        "stream": entry.stream, "finished": entry.finished, "output_tokens": entry.output_tokens,
        "usage": None if usage is None else dataclasses.asdict(usage),
    }  # fmt: skip


def _error(
    api: ApiKind,
    entry: ReceivedRequest,
    status: int,
    message: str,
    *,
    param: str | None = None,
    error_type: str | None = None,
    retry_after_s: float | None = None,
) -> Response:
    entry.status, entry.error, entry.finished = status, message, True
    headers = {"request-id" if api == "anthropic" else "x-request-id": request_id()}
    if retry_after_s is not None:
        headers["retry-after"] = str(int(retry_after_s) if float(retry_after_s).is_integer() else retry_after_s)
    body = error_body(api, status, message, param=param, error_type=error_type)
    return JSONResponse(body, status_code=status, headers=headers)


async def _handle(state: UpstreamState, request: Request, api: ApiKind, *, count_only: bool = False) -> Response:
    headers = {k.lower(): v for k, v in request.headers.items()}
    raw = await request.body()
    entry = ReceivedRequest(api, request.url.path, headers, None)
    state.record(entry)
    credential = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not credential:
        message = (
            "x-api-key header is required"
            if api == "anthropic"
            else "You didn't provide an API key. You need to provide your API key in an Authorization header."
        )
        return _error(api, entry, 401, message)
    try:
        body = json.loads(raw)
    except ValueError:
        return _error(api, entry, 400, "There was an error parsing the body of your request" if api == "anthropic"
                      else "We could not parse the JSON body of your request.")  # fmt: skip
    entry.body = body
    prior: list[dict[str, Any]] = []
    try:
        if api == "anthropic":
            betas = frozenset(b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip())
            validate_messages_request(body, state.signer, count_tokens=count_only, betas=betas)
        elif api == "openai_chat":
            validate_chat_request(body)
        else:
            validate_responses_request(body, state.signer, state.responses.get)
            if body.get("previous_response_id"):
                prior = state.responses[body["previous_response_id"]]
    except InvalidRequest as exc:
        return _error(api, entry, exc.status, exc.message, param=exc.param)
    session = entry.session = session_key(api, headers, body["model"])
    if api == "anthropic":
        segments = render_anthropic(body, state.tokens)
    elif api == "openai_chat":
        segments = render_chat(body, state.tokens)
    else:
        segments = render_responses(body, prior, state.tokens)
    if count_only:
        entry.finished = True
        return JSONResponse({"input_tokens": sum(s.tokens for s in segments)})

    turn = Turn(api, body, session, state.next_index(), prior)
    step = state.next_reply(turn)
    entry.reply = step
    if isinstance(step, ApiError):
        await asyncio.sleep(0)
        return _error(
            api, entry, step.status, step.message, error_type=step.error_type, retry_after_s=step.retry_after_s
        )
    reply = step
    calls_tools = any(isinstance(b, ToolCall) for b in reply.content)
    thinks = any(isinstance(b, Thinking) for b in reply.content)
    if api == "anthropic" and turn.thinking_enabled and calls_tools and not thinks:  # the model thinks first
        reply = Reply((Thinking("I will use a tool for this."), *reply.content), **_knobs(reply))
    if api == "anthropic":
        usage = state.cache.anthropic(session, segments)
    else:
        retention = 86_400.0 if body.get("prompt_cache_retention") == "24h" else None
        usage = state.cache.openai(session, segments, retention)
    entry.usage = usage
    out_tokens = reply.output_tokens if reply.output_tokens is not None else _output_tokens(state, reply)
    entry.output_tokens = out_tokens
    state.cache.stats(session).output_tokens += out_tokens
    stream = entry.stream = bool(body.get("stream"))
    model = body["model"]

    if api == "anthropic":
        omitted = isinstance(body.get("thinking"), dict) and body["thinking"].get("display") == "omitted"
        blocks = emit_anthropic.blocks_of(reply, state.signer, state.mint_id, omit_thinking=omitted)
        msg_id = state.mint_id("msg_")
        if not stream:
            return await _answer(entry, reply, emit_anthropic.message(msg_id, model, blocks, reply, usage, out_tokens),
                                 {"request-id": request_id()})  # fmt: skip
        sse = emit_anthropic.stream_events(msg_id, model, blocks, reply, usage, out_tokens)
        return _stream(state, entry, reply, _event_lines(sse), {"request-id": request_id()})
    if api == "openai_chat":
        text, calls = emit_chat.parts_of(reply, state.mint_id)
        cid = state.mint_id("chatcmpl-")
        if not stream:
            return await _answer(entry, reply, emit_chat.completion(cid, model, reply, text, calls, usage, out_tokens),
                                 {"x-request-id": request_id()})  # fmt: skip
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = emit_chat.stream_chunks(cid, model, reply, text, calls, usage, out_tokens, include_usage)
        return _stream(state, entry, reply, _chat_lines(chunks), {"x-request-id": request_id()})
    encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
    items = emit_responses.items_of(reply, state.signer, state.mint_id, encrypted)
    rid = state.mint_id("resp_")
    if body.get("store", True) is not False:
        new_input = body.get("input")
        if isinstance(new_input, str):
            new_input = [{"type": "message", "role": "user", "content": new_input}]
        state.responses[rid] = [*prior, *(new_input or []), *items]
    if not stream:
        full = emit_responses.response(rid, body, items, "completed", emit_responses.usage_of(usage, out_tokens),
                                       int(time.time()))  # fmt: skip
        return await _answer(entry, reply, full, {"x-request-id": request_id()})
    events = emit_responses.stream_events(rid, body, items, reply, usage, out_tokens)
    return _stream(state, entry, reply, _responses_lines(events), {"x-request-id": request_id()})


def _knobs(reply: Reply) -> dict[str, Any]:
    return {k: getattr(reply, k) for k in ("stop_reason", "first_token_delay_s", "event_delay_s", "drop_after_events",
                                            "chunk_chars", "output_tokens")}  # fmt: skip


def _output_tokens(state: UpstreamState, reply: Reply) -> int:
    total = 0
    for block in reply.content:
        if isinstance(block, Text):
            total += state.tokens.count(block.text)
        elif isinstance(block, ToolCall):
            total += state.tokens.count(block.name + json.dumps(block.arguments)) + 3
        else:
            total += state.tokens.count(block.text)
    return max(total, 1)


def _event_lines(events: Iterator[emit_anthropic.SseEvent]) -> Iterator[str]:
    """Anthropic's SSE framing: a named event per line pair."""
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n"


def _responses_lines(events: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The Responses API's SSE framing: the event name is the payload's type."""
    for event in events:
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"


def _chat_lines(chunks: Iterator[dict[str, Any]]) -> Iterator[str]:
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


async def _answer(entry: ReceivedRequest, reply: Reply, body: dict[str, Any], headers: dict[str, str]) -> Response:
    if reply.first_token_delay_s:
        await asyncio.sleep(reply.first_token_delay_s)
    entry.first_event_at = time.monotonic()
    entry.finished = True
    return JSONResponse(body, headers=headers)


def _stream(
    state: UpstreamState,
    entry: ReceivedRequest,
    reply: Reply,
    lines: Iterator[str],
    headers: dict[str, str],
    *,
    media_type: str = "text/event-stream; charset=utf-8",
    no_cache: bool = True,
) -> Response:
    """The scripted stream of `lines` (delays, a scripted drop, the client going away recorded on `entry`)."""

    async def body() -> AsyncIterator[bytes]:
        state.active_streams += 1
        try:
            if reply.first_token_delay_s:
                await asyncio.sleep(reply.first_token_delay_s)
            for n, line in enumerate(lines):
                if reply.drop_after_events is not None and n >= reply.drop_after_events:
                    raise StreamDropped(f"scripted drop after {n} events")
                if n and reply.event_delay_s:
                    await asyncio.sleep(reply.event_delay_s)
                if entry.first_event_at is None:
                    entry.first_event_at = time.monotonic()
                yield line.encode()
            entry.finished = True
        finally:
            state.active_streams -= 1
            if not entry.finished and reply.drop_after_events is None:
                entry.client_gone = True

    headers = {**headers, "cache-control": "no-cache"} if no_cache else headers
    return StreamingResponse(body(), media_type=media_type, headers=headers)
