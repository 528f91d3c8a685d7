"""One call of a public API answered by the scripted upstream: validated, rendered into its prompt, looked up in the
simulated cache, scripted and emitted (JSON or a stream), in the API's wire format or a cloud's framing around it.
app.py routes the vendors' own paths here; the clouds (bedrock_app, vertex_app, azure_app) route theirs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from llm_upstream import emit_anthropic, emit_chat, emit_converse, emit_responses
from llm_upstream.errors import ApiError, ApiKind, InvalidRequest, error_body, request_id
from llm_upstream.prompt import render_anthropic, render_chat, render_converse, render_responses
from llm_upstream.script import Reply, Text, Thinking, ToolCall, Turn
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key
from llm_upstream.validate_anthropic import validate_messages_request
from llm_upstream.validate_converse import validate_converse_request
from llm_upstream.validate_openai import validate_chat_request, validate_responses_request


class StreamDropped(Exception):
    """Raised inside a stream to cut the connection mid-way (a scripted fault)."""


def error_response(
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


@dataclasses.dataclass(frozen=True, slots=True)
class Framing:
    """How a cloud carries an API's answers (the public APIs: None): the body and headers it puts around a JSON answer,
    and the bytes of a stream (Bedrock: AWS event-stream frames around the Anthropic events)."""

    stream: Callable[[ReceivedRequest, Iterator[emit_anthropic.SseEvent]], Iterator[bytes]]
    media_type: str
    headers: Callable[[ReceivedRequest], dict[str, str]]
    error: Callable[[ReceivedRequest, int, str, str | None], Response]


async def answer(
    state: UpstreamState,
    entry: ReceivedRequest,
    api: ApiKind,
    body: Any,
    headers: dict[str, str],
    *,
    count_only: bool = False,
    session: str | None = None,
    stream: bool | None = None,
    model: str | None = None,
    framing: Framing | None = None,
) -> Response:
    """Validate, cache, script and emit one call of `api` whose `body` is in the public API's form (a cloud passes its
    own `session` scope, `stream` when its path says it, and its `framing`)."""
    entry.body = body

    def refuse(status: int, message: str, param: str | None = None, error_type: str | None = None,
               retry_after_s: float | None = None) -> Response:  # fmt: skip
        if framing is not None:
            return framing.error(entry, status, message, error_type)
        return error_response(
            api, entry, status, message, param=param, error_type=error_type, retry_after_s=retry_after_s
        )

    prior: list[dict[str, Any]] = []
    try:
        if api == "anthropic":
            betas = frozenset(b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip())
            validate_messages_request(body, state.signer, count_tokens=count_only, betas=betas)
        elif api == "openai_chat":
            validate_chat_request(body)
        elif api == "converse":
            validate_converse_request(body, state.signer)
        else:
            validate_responses_request(body, state.signer, state.responses.get)
            if body.get("previous_response_id"):
                prior = state.responses[body["previous_response_id"]]
    except InvalidRequest as exc:
        return refuse(exc.status, exc.message, exc.param)
    model = model or body["model"]
    session = entry.session = session or session_key(api, headers, model)
    if api == "anthropic":
        segments = render_anthropic(body, state.tokens)
    elif api == "converse":
        segments = render_converse(body, state.tokens)
    elif api == "openai_chat":
        segments = render_chat(body, state.tokens)
    else:
        segments = render_responses(body, prior, state.tokens)
    if count_only:
        entry.finished = True
        return JSONResponse({"input_tokens": sum(s.tokens for s in segments)})

    turn = Turn(api, body, session, state.next_index(), prior, model_name=model)
    step = state.next_reply(turn)
    entry.reply = step
    if isinstance(step, ApiError):
        await asyncio.sleep(0)
        return refuse(step.status, step.message, error_type=step.error_type, retry_after_s=step.retry_after_s)
    reply = step
    calls_tools = any(isinstance(b, ToolCall) for b in reply.content)
    thinks = any(isinstance(b, Thinking) for b in reply.content)
    if api == "anthropic" and turn.thinking_enabled and calls_tools and not thinks:  # the model thinks first
        reply = Reply((Thinking("I will use a tool for this."), *reply.content), **_knobs(reply))
    if api in ("anthropic", "converse"):  # Bedrock's Converse caches Claude as Anthropic does, at cachePoint blocks
        usage = state.cache.anthropic(session, segments)
    else:
        retention = 86_400.0 if body.get("prompt_cache_retention") == "24h" else None
        usage = state.cache.openai(session, segments, retention)
    entry.usage = usage
    out_tokens = reply.output_tokens if reply.output_tokens is not None else _output_tokens(state, reply)
    entry.output_tokens = out_tokens
    state.cache.stats(session).output_tokens += out_tokens
    stream = entry.stream = bool(body.get("stream")) if stream is None else stream

    if api == "converse" and framing is not None:
        converse_blocks = emit_converse.blocks_of(reply, state.signer, state.mint_id)
        if not stream:
            full = emit_converse.response(converse_blocks, reply, usage, out_tokens)
            return await _answer(entry, reply, full, framing.headers(entry))
        events = emit_converse.stream_events(converse_blocks, reply, usage, out_tokens)
        frames = framing.stream(entry, events)
        return _stream(state, entry, reply, frames, framing.headers(entry), media_type=framing.media_type,
                       no_cache=False)  # fmt: skip

    if api == "anthropic":
        omitted = isinstance(body.get("thinking"), dict) and body["thinking"].get("display") == "omitted"
        blocks = emit_anthropic.blocks_of(reply, state.signer, state.mint_id, omit_thinking=omitted)
        msg_id = state.mint_id("msg_")
        answer_headers = framing.headers(entry) if framing is not None else {"request-id": request_id()}
        if not stream:
            return await _answer(entry, reply, emit_anthropic.message(msg_id, model, blocks, reply, usage, out_tokens),
                                 answer_headers)  # fmt: skip
        sse = emit_anthropic.stream_events(msg_id, model, blocks, reply, usage, out_tokens)
        if framing is not None:
            frames = framing.stream(entry, sse)
            return _stream(state, entry, reply, frames, answer_headers, media_type=framing.media_type, no_cache=False)
        return _stream(state, entry, reply, _event_lines(sse), answer_headers)
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
    items_events = emit_responses.stream_events(rid, body, items, reply, usage, out_tokens)
    return _stream(state, entry, reply, _responses_lines(items_events), {"x-request-id": request_id()})


def _knobs(reply: Reply) -> dict[str, Any]:
    return {k: getattr(reply, k) for k in ("stop_reason", "first_token_delay_s", "event_delay_s", "drop_after_events",
                                            "error_after_events", "chunk_chars", "output_tokens")}  # fmt: skip


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
    lines: Iterator[str | bytes],
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
                yield line.encode() if isinstance(line, str) else line
            entry.finished = True
        finally:
            state.active_streams -= 1
            if not entry.finished and reply.drop_after_events is None:
                entry.client_gone = True

    headers = {**headers, "cache-control": "no-cache"} if no_cache else headers
    return StreamingResponse(body(), media_type=media_type, headers=headers)
