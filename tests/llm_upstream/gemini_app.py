"""The Gemini API of the scripted upstream: `/{v1beta|v1}/models/{model}:generateContent`,
`:streamGenerateContent?alt=sse`, `:countTokens`, and the model list.

The key comes in `x-goog-api-key` or `?key=` (none: 403 PERMISSION_DENIED, as the API answers). The prompt is
rendered one segment per tool declaration, system part and content part, and the implicit cache reads the longest
prefix shared with an earlier prompt of the session (credential + model), at least `gemini_min_tokens` (1,024, as
for Gemini 2.5 Flash), reported exactly as `cachedContentTokenCount`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm_upstream import emit_gemini
from llm_upstream.answer import _output_tokens
from llm_upstream.answer import _stream as stream_lines
from llm_upstream.errors import ApiError, InvalidRequest, error_body
from llm_upstream.prompt import render_gemini
from llm_upstream.script import Turn
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key
from llm_upstream.validate_gemini import validate_gemini_request

GEMINI_MODELS = ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.5-flash-lite", "gemini-3-pro-preview",
                 "gemini-3-flash-preview"]  # fmt: skip
VERSIONS = ("v1", "v1beta")
METHODS = ("generateContent", "streamGenerateContent", "countTokens")


def gemini_key(request: Request) -> str:
    return request.headers.get("x-goog-api-key") or request.query_params.get("key") or ""


def model_list() -> dict[str, Any]:
    return {
        "models": [
            {"name": f"models/{m}", "version": "001", "displayName": m, "inputTokenLimit": 1_048_576,
             "outputTokenLimit": 65_536, "supportedGenerationMethods": ["generateContent", "countTokens"]}
            for m in GEMINI_MODELS
        ]
    }  # fmt: skip


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _error(entry: ReceivedRequest, status: int, message: str) -> Response:
    entry.status, entry.error, entry.finished = status, message, True
    return JSONResponse(error_body("gemini", status, message), status_code=status)


async def handle(state: UpstreamState, request: Request) -> Response:
    version, rest = request.path_params["version"], request.path_params["rest"]
    model, _, method = rest.partition(":")
    headers = {k.lower(): v for k, v in request.headers.items()}
    entry = ReceivedRequest("gemini", request.url.path, headers, None)
    state.record(entry)
    if version not in VERSIONS or method not in METHODS:
        return _error(entry, 404, f"Method not found: {rest}")
    key = gemini_key(request)
    if not key:
        return _error(
            entry,
            403,
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key "
            "or other form of API consumer identity to call this API.",
        )
    if model not in GEMINI_MODELS:
        message = f"models/{model} is not found for API version {version}, or is not supported for {method}."
        return _error(entry, 404, message + " Call ListModels to see the list of available models.")
    session = session_key("gemini", {"x-api-key": key}, model)
    return await answer_gemini(state, entry, await request.body(), model, method, session, request)


async def answer_gemini(
    state: UpstreamState,
    entry: ReceivedRequest,
    raw: bytes,
    model: str,
    method: str,
    session: str,
    request: Request,
    *,
    min_tokens: int | None = None,
    roles_required: bool = False,
) -> Response:
    """One generateContent / streamGenerateContent / countTokens call (the Gemini API's and Vertex AI's alike: Vertex
    wants every content's `role`, and caches implicitly from `min_tokens` on)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return _error(entry, 400, "Invalid JSON payload received. Unexpected token.")
    entry.body = body
    try:
        inner = body.get("generateContentRequest", body) if isinstance(body, dict) and method == "countTokens" else body
        if roles_required and isinstance(inner, dict):
            for i, content in enumerate(inner.get("contents") or []):
                if isinstance(content, dict) and "role" not in content:
                    raise InvalidRequest(f"Please use a valid role: user, model. (contents[{i}].role is missing)")
        validate_gemini_request(inner, model, state.signer)
    except InvalidRequest as exc:
        return _error(entry, exc.status, exc.message)
    segments = render_gemini(body.get("generateContentRequest", body), state.tokens)
    if method == "countTokens":
        entry.finished = True
        total = sum(s.tokens for s in segments)
        return JSONResponse({"totalTokens": total, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]})
    entry.session = session
    turn = Turn("gemini", body, session, state.next_index(), model_name=model)
    step = state.next_reply(turn)
    entry.reply = step
    if isinstance(step, ApiError):
        await asyncio.sleep(0)
        return _error(entry, step.status, step.message)
    reply = step
    usage = entry.usage = state.cache.gemini(session, segments, min_tokens)
    out_tokens = reply.output_tokens if reply.output_tokens is not None else _output_tokens(state, reply)
    entry.output_tokens = out_tokens
    state.cache.stats(session).output_tokens += out_tokens
    thinking = ((body.get("generationConfig") or {}).get("thinkingConfig") or {}).get("includeThoughts") is True
    parts = emit_gemini.parts_of(reply, model, state.signer, state.mint_id, thinking)
    rid = state.mint_id("")
    if method == "generateContent":
        if reply.first_token_delay_s:
            await asyncio.sleep(reply.first_token_delay_s)
        entry.first_event_at = time.monotonic()
        entry.finished = True
        return JSONResponse(emit_gemini.response(parts, reply, model, rid, usage, out_tokens))
    entry.stream = True
    if request.query_params.get("alt") != "sse":  # without alt=sse the API streams one JSON array
        full = list(emit_gemini.stream_chunks(parts, reply, model, rid, usage, out_tokens))
        entry.finished = True
        return JSONResponse(full)
    chunks = emit_gemini.stream_chunks(parts, reply, model, rid, usage, out_tokens)
    return _stream(state, entry, reply, chunks)


def _stream(state: UpstreamState, entry: ReceivedRequest, reply: Any, chunks: Iterator[dict[str, Any]]) -> Response:
    lines = (f"data: {_json(chunk)}\r\n\r\n" for chunk in chunks)
    headers = {"x-gemini-service-tier": "standard"}
    return stream_lines(state, entry, reply, lines, headers, media_type="text/event-stream", no_cache=False)


def gemini_routes(state: UpstreamState) -> list[Route]:
    async def generate(request: Request) -> Response:
        return await handle(state, request)

    async def models(request: Request) -> Response:
        state.record(ReceivedRequest("gemini", request.url.path, dict(request.headers), None))
        return JSONResponse(model_list())

    return [
        Route("/v1beta/models", models, methods=["GET"]),
        Route("/{version}/models/{rest}", generate, methods=["POST"]),
    ]
