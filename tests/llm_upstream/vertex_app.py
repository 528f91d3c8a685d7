"""Google Vertex AI of the scripted upstream: the resource paths
`/{v1|v1beta1}/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}` for Gemini
(publisher `google`: `generateContent`, `streamGenerateContent?alt=sse`, `countTokens`) and Claude (publisher
`anthropic`: `rawPredict`, `streamRawPredict`; the Messages body with `anthropic_version` and the model in the path).

Callers present an OAuth access token (`Authorization: Bearer …`); `TOKENS` maps the known test tokens to the
projects they may use. A missing, unknown or expired token is Google's 401 UNAUTHENTICATED, a project the token may
not use its 403 PERMISSION_DENIED, an unknown location or publisher a 404, all in Google's error document; a Claude
request the model refuses gets Anthropic's error document, as Vertex relays it.

Prompt caches are Vertex's: Gemini's implicit cache from 2,048 tokens on (the Vertex AI context cache overview),
Claude's the Anthropic rule at `cache_control` breakpoints; both scoped to the project.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm_upstream.answer import answer
from llm_upstream.errors import error_body
from llm_upstream.gemini_app import GEMINI_MODELS, answer_gemini
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key
from llm_upstream.validate_anthropic import PER_TURN_SYSTEM_BETA

TOKENS = {"ya29.vertex-test-token": frozenset({"test-project", "proj-1"})}
EXPIRED_TOKENS = frozenset({"ya29.expired-token"})
LOCATIONS = frozenset({"global", "us", "eu", "us-central1", "us-east5", "us-east4", "europe-west1", "europe-west4",
                       "asia-southeast1"})  # fmt: skip
VERSIONS = frozenset({"v1", "v1beta1"})
GEMINI_MIN_TOKENS = 2048  # "Caching requests must contain a minimum of 2,048 tokens" (Vertex AI context cache overview)
VERTEX_ANTHROPIC_VERSIONS = frozenset({"vertex-2023-10-16", "2026-10-21"})
CLAUDE_RE = re.compile(r"^claude-[a-z0-9.-]+(?:@\d{8})?$")
UNAUTHENTICATED = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
    "authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)
MISSING = (
    "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other "
    "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)


def google_error(entry: ReceivedRequest, status: int, message: str, kind: str | None = None) -> Response:
    entry.status, entry.error, entry.finished = status, message, True
    return JSONResponse(error_body("gemini", status, message, error_type=kind), status_code=status)


async def handle(state: UpstreamState, request: Request) -> Response:
    params = request.path_params
    version, project, location, publisher = params["version"], params["project"], params["location"], params["pub"]
    model, _, method = params["rest"].partition(":")
    headers = {k.lower(): v for k, v in request.headers.items()}
    entry = ReceivedRequest("anthropic" if publisher == "anthropic" else "gemini", request.url.path, headers, None,
                            cloud="vertex")  # fmt: skip
    state.record(entry)
    authorization = headers.get("authorization", "")
    token = authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""
    if not token:
        return google_error(entry, 401, MISSING, "UNAUTHENTICATED")
    if token in EXPIRED_TOKENS or token not in TOKENS:
        return google_error(entry, 401, UNAUTHENTICATED, "UNAUTHENTICATED")
    resource = f"projects/{project}/locations/{location}/publishers/{publisher}/models/{model}"
    if project not in TOKENS[token]:
        message = (
            f"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/{resource}'"
        )
        return google_error(entry, 403, message + " (or it may not exist).", "PERMISSION_DENIED")
    if version not in VERSIONS or location not in LOCATIONS:
        return google_error(entry, 404, f"The requested URL /{version}/{resource} was not found on this server.")
    scope = {"authorization": project}  # Vertex's caches are the project's
    if publisher == "google":
        if method not in ("generateContent", "streamGenerateContent", "countTokens") or model not in GEMINI_MODELS:
            return google_error(entry, 404, f"Publisher Model `{resource}` was not found or your project does not "
                                "have access to it.")  # fmt: skip
        session = session_key("gemini", scope, model)
        raw = await request.body()
        return await answer_gemini(state, entry, raw, model, method, session, request, min_tokens=GEMINI_MIN_TOKENS,
                                   roles_required=True)  # fmt: skip
    if publisher != "anthropic" or method not in ("rawPredict", "streamRawPredict") or not CLAUDE_RE.match(model):
        return google_error(entry, 404, f"Publisher Model `{resource}` was not found or your project does not have "
                            "access to it.")  # fmt: skip
    try:
        body = json.loads(await request.body())
    except ValueError:
        return google_error(entry, 400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
    refused = _refusal(body)
    if refused is not None:
        return google_error(entry, 400, refused, "INVALID_ARGUMENT")
    inner: dict[str, Any] = {k: v for k, v in body.items() if k != "anthropic_version"}
    stream = method == "streamRawPredict"
    # Claude Code 2.1.328 sends `system` messages between the turns to Vertex without the per-turn-control beta
    betas = ",".join(filter(None, [headers.get("anthropic-beta", ""), PER_TURN_SYSTEM_BETA]))
    headers = {**headers, "anthropic-beta": betas}
    response = await answer(state, entry, "anthropic", {**inner, "model": model}, headers,
                            session=session_key("anthropic", scope, model), stream=stream)  # fmt: skip
    entry.body = body
    return response


def _refusal(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Expected an object."
    if body.get("anthropic_version") not in VERTEX_ANTHROPIC_VERSIONS:
        return f"anthropic_version: Input should be 'vertex-2023-10-16' (got {body.get('anthropic_version')!r})"
    if "model" in body:
        return "model: Extra inputs are not permitted (the model is named in the path)"
    return None


def vertex_routes(state: UpstreamState) -> list[Route]:
    async def endpoint(request: Request) -> Response:
        return await handle(state, request)

    path = "/{version}/projects/{project}/locations/{location}/publishers/{pub}/models/{rest}"
    return [Route(path, endpoint, methods=["POST"])]
