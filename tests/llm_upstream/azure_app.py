"""Azure OpenAI of the scripted upstream: Chat Completions and Responses under a resource's paths,
`/openai/deployments/{deployment}/chat/completions?api-version=…`, `/openai/responses?api-version=…` (the deployment
in the body's `model`), and the v1 API `/openai/v1/chat/completions`, `/openai/v1/responses` (no api-version).

Checked as Azure checks: a key in `api-key` or an Entra ID token in `Authorization: Bearer` (`KEYS`, `TOKENS`; else
401), the `api-version` (missing on a dated path: 404 Resource not found; unknown: 400 API version not supported;
Responses before 2025-03-01-preview refused), the deployment (`DEPLOYMENTS`; else 404 DeploymentNotFound), then the
body as OpenAI validates it (OpenAI's error documents, as Azure relays them). Prompt caching is OpenAI's automatic
cache (from 1,024 tokens, in 128-token steps), scoped to the resource's key.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm_upstream.answer import answer
from llm_upstream.errors import ApiKind
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key

KEYS = frozenset({"azure-test-key"})
TOKENS = frozenset({"eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.azure-test-token"})
DEPLOYMENTS = {"gpt-4o": "gpt-4o-2024-11-20", "gpt-5": "gpt-5-2025-08-07", "prod-gpt5": "gpt-5-2025-08-07",
               "gpt-4.1": "gpt-4.1-2025-04-14"}  # fmt: skip
API_VERSIONS = frozenset({"2024-02-01", "2024-06-01", "2024-10-21", "2024-12-01-preview", "2025-01-01-preview",
                          "2025-03-01-preview", "2025-04-01-preview", "2025-04-14", "2025-06-01"})  # fmt: skip
RESPONSES_SINCE = "2025-03-01-preview"
V1_VERSIONS = frozenset({"preview", "latest", "v1"})
ACCESS_DENIED = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an "
    "active subscription and use a correct regional API endpoint for your resource."
)


def azure_error(entry: ReceivedRequest, status: int, code: str, message: str) -> Response:
    entry.status, entry.error, entry.finished = status, message, True
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def handle(state: UpstreamState, request: Request, api: ApiKind, *, v1: bool) -> Response:
    headers = {k.lower(): v for k, v in request.headers.items()}
    entry = ReceivedRequest(api, request.url.path, headers, None, cloud="azure")
    state.record(entry)
    bearer = headers.get("authorization", "")
    credential = headers.get("api-key", "")
    if credential not in KEYS and bearer.removeprefix("Bearer ").strip() not in TOKENS | KEYS:
        return azure_error(entry, 401, "401", ACCESS_DENIED)
    credential = credential or bearer.removeprefix("Bearer ").strip()
    version = request.query_params.get("api-version")
    if v1:
        if version is not None and version not in V1_VERSIONS:
            return azure_error(entry, 400, "BadRequest", "API version not supported")
    elif version is None:
        return azure_error(entry, 404, "404", "Resource not found")
    elif version not in API_VERSIONS:
        return azure_error(entry, 400, "BadRequest", "API version not supported")
    elif api == "responses" and version < RESPONSES_SINCE:
        message = f"Azure OpenAI Responses API is enabled only for api-version {RESPONSES_SINCE} and later"
        return azure_error(entry, 400, "BadRequest", message)
    try:
        body = json.loads(await request.body())
    except ValueError:
        return azure_error(entry, 400, "BadRequest", "We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        return azure_error(entry, 400, "BadRequest", "The request body must be a JSON object.")
    deployment = request.path_params.get("deployment") or body.get("model")
    if not isinstance(deployment, str) or deployment not in DEPLOYMENTS:
        message = ("The API deployment for this resource does not exist. If you created the deployment within the last "
                   "5 minutes, please wait a moment and try again.")  # fmt: skip
        return azure_error(entry, 404, "DeploymentNotFound", message)
    model = DEPLOYMENTS[deployment]
    session = session_key(api, {"api-key": credential}, deployment)
    response = await answer(state, entry, api, {**body, "model": model}, headers, session=session, model=model)
    entry.body = body
    return response


def azure_routes(state: UpstreamState) -> list[Route]:
    def endpoint(api: ApiKind, *, v1: bool) -> Any:
        async def run(request: Request) -> Response:
            return await handle(state, request, api, v1=v1)

        return run

    return [
        Route("/openai/deployments/{deployment}/chat/completions", endpoint("openai_chat", v1=False), methods=["POST"]),
        Route("/openai/responses", endpoint("responses", v1=False), methods=["POST"]),
        Route("/openai/v1/chat/completions", endpoint("openai_chat", v1=True), methods=["POST"]),
        Route("/openai/v1/responses", endpoint("responses", v1=True), methods=["POST"]),
    ]
