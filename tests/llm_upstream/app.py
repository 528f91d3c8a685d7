"""The ASGI app: the four LLM APIs (+ count_tokens and models), validating, cache-simulating, scripted (the calls
themselves: answer.py; Gemini's routes: gemini_app.py; the clouds: bedrock_app.py, vertex_app.py, azure_app.py)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm_upstream.answer import answer, error_response
from llm_upstream.azure_app import azure_routes
from llm_upstream.bedrock_app import bedrock_routes
from llm_upstream.errors import ApiKind
from llm_upstream.gemini_app import gemini_key, gemini_routes, model_list
from llm_upstream.state import ReceivedRequest, UpstreamState
from llm_upstream.vertex_app import vertex_routes

MODELS = ["claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5", "gpt-5", "gpt-5-mini", "gpt-4.1"]


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
            *bedrock_routes(state),
            *vertex_routes(state),
            *azure_routes(state),
        ]
    )


def summary(entry: ReceivedRequest) -> dict[str, Any]:
    usage = entry.usage
    return {
        "api": entry.api, "path": entry.path, "status": entry.status, "error": entry.error, "session": entry.session,
        "stream": entry.stream, "finished": entry.finished, "output_tokens": entry.output_tokens,
        "usage": None if usage is None else dataclasses.asdict(usage),
    }  # fmt: skip


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
        return error_response(api, entry, 401, message)
    try:
        body = json.loads(raw)
    except ValueError:
        unreadable = (
            "There was an error parsing the body of your request"
            if api == "anthropic"
            else "We could not parse the JSON body of your request."
        )
        return error_response(api, entry, 400, unreadable)
    return await answer(state, entry, api, body, headers, count_only=count_only)
