"""Amazon Bedrock of the scripted upstream (bedrock-runtime): `POST /model/{modelId}/invoke`,
`/invoke-with-response-stream` (the Anthropic Messages body with `anthropic_version`, the model in the path, the stream
in AWS event-stream `chunk` frames carrying each Messages event base64 in `bytes`) and `/converse`,
`/converse-stream` (the Converse API, its stream one frame per event).

Every request is authenticated as AWS does (aws_auth.py: a SigV4 signature recomputed with botocore against known
test credentials, or a Bedrock API key); failures are Bedrock's JSON errors (status, `x-amzn-ErrorType`,
`{"message": …}`). The prompt cache is Claude's on Bedrock: checkpoints where the request marks them (`cache_control`
on InvokeModel, `cachePoint` blocks on Converse), at least 1,024 tokens, read back up to 20 blocks before a
checkpoint, 5 minutes; scoped to the caller's account (the signing key, the API key). A scripted `error_after_events`
ends a stream with Bedrock's own exception frame (`modelStreamErrorException`), as the service ends one it cannot
finish.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from llm_upstream import aws_frames
from llm_upstream.answer import Framing, answer
from llm_upstream.aws_auth import AwsAuthError, check
from llm_upstream.emit_anthropic import SseEvent
from llm_upstream.errors import ApiKind
from llm_upstream.state import ReceivedRequest, UpstreamState, session_key
from llm_upstream.validate_anthropic import PER_TURN_SYSTEM_BETA

REGION = "us-east-1"
# anthropic_version values Bedrock accepts for Claude: its documented one and the dated API versions the SDKs send
ANTHROPIC_VERSIONS = frozenset({"bedrock-2023-05-31", "2023-06-01", "2026-10-21"})
MODEL_RE = re.compile(
    r"^(?:(?:us|eu|apac|jp|au|global)\.)?anthropic\.claude-[a-z0-9.-]+?(?:-v\d+(?::\d+)?)?$"
    r"|^arn:aws:bedrock:[a-z0-9-]+:\d{12}:(?:inference-profile|application-inference-profile)/[A-Za-z0-9.:/-]+$"
)
ERROR_TYPES = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
               408: "ModelTimeoutException", 424: "ModelErrorException", 429: "ThrottlingException",
               500: "InternalServerException", 503: "ServiceUnavailableException"}  # fmt: skip
ERROR_NAMESPACE = ":http://internal.amazon.com/coral/com.amazon.bedrock/"


def error_response(entry: ReceivedRequest, status: int, message: str, error_type: str | None = None) -> Response:
    entry.status, entry.error, entry.finished = status, message, True
    kind = error_type or ERROR_TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")
    headers = {"x-amzn-RequestId": str(uuid.uuid4()), "x-amzn-ErrorType": kind + ERROR_NAMESPACE}
    return JSONResponse({"message": message}, status_code=status, headers=headers)


def _headers(entry: ReceivedRequest) -> dict[str, str]:
    headers = {"x-amzn-RequestId": str(uuid.uuid4())}
    if entry.usage is not None:
        headers |= {
            "X-Amzn-Bedrock-Input-Token-Count": str(entry.usage.uncached),
            "X-Amzn-Bedrock-Output-Token-Count": str(entry.output_tokens),
            "X-Amzn-Bedrock-Cache-Read-Input-Token-Count": str(entry.usage.cache_read),
            "X-Amzn-Bedrock-Cache-Write-Input-Token-Count": str(entry.usage.cache_write),
            "X-Amzn-Bedrock-Invocation-Latency": "42",
        }
    return headers


def _ended_by_exception(entry: ReceivedRequest, frames: Iterator[bytes]) -> Iterator[bytes]:
    limit = getattr(entry.reply, "error_after_events", None)
    for n, data in enumerate(frames):
        if limit is not None and n >= limit:
            entry.finished = True
            yield aws_frames.exception("modelStreamErrorException", "The model stream was interrupted (scripted).")
            return
        yield data


def _invoke_frames(entry: ReceivedRequest, events: Iterator[SseEvent]) -> Iterator[bytes]:
    """The Messages events as Bedrock streams them: each in a `chunk`, no pings, the invocation metrics on the
    last."""

    def chunks() -> Iterator[bytes]:
        for name, data in events:
            if name == "ping":
                continue
            if name == "message_stop" and entry.usage is not None:
                usage = entry.usage
                data = {**data, "amazon-bedrock-invocationMetrics": {
                    "inputTokenCount": usage.uncached, "outputTokenCount": entry.output_tokens,
                    "invocationLatency": 42, "firstByteLatency": 21, "cacheReadInputTokenCount": usage.cache_read,
                    "cacheWriteInputTokenCount": usage.cache_write}}  # fmt: skip
            yield aws_frames.chunk(data)

    return _ended_by_exception(entry, chunks())


def _converse_frames(entry: ReceivedRequest, events: Iterator[SseEvent]) -> Iterator[bytes]:
    return _ended_by_exception(entry, (aws_frames.event(str(name), data) for name, data in events))


MEDIA = "application/vnd.amazon.eventstream"
INVOKE = Framing(_invoke_frames, MEDIA, _headers, error_response)
CONVERSE = Framing(_converse_frames, MEDIA, _headers, error_response)


async def handle(state: UpstreamState, request: Request, operation: str) -> Response:
    headers = {k.lower(): v for k, v in request.headers.items()}
    raw = await request.body()
    api: ApiKind = "converse" if operation.startswith("converse") else "anthropic"
    entry = ReceivedRequest(api, request.url.path, headers, None, cloud="bedrock")
    state.record(entry)
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    url = f"http://{headers.get('host', '')}{raw_path.decode('latin-1')}"
    if request.url.query:
        url += "?" + request.url.query
    try:
        caller = check(request.method, url, headers, raw, region=state.bedrock_region)
    except AwsAuthError as exc:
        return error_response(entry, 403, exc.message, exc.error_type)
    model = request.path_params["model_id"]
    if not MODEL_RE.match(model):
        return error_response(entry, 400, "The provided model identifier is invalid.")
    try:
        body = json.loads(raw)
    except ValueError:
        return error_response(entry, 400, "Malformed input request, please reformat your input and try again.")
    stream = operation.endswith("stream")
    session = session_key(api, {"authorization": caller.principal}, model)
    if api == "converse":
        response = await answer(state, entry, api, body, headers, session=session, stream=stream, model=model,
                                framing=CONVERSE)  # fmt: skip
        return response
    if not isinstance(body, dict):
        return error_response(entry, 400, "Malformed input request: #: expected type: JSONObject, found: JSONArray, "
                              "please reformat your input and try again.")  # fmt: skip
    refused = _invoke_refusal(body)
    if refused is not None:
        return error_response(entry, 400, f"Malformed input request: {refused}, please reformat your input and try "
                              "again.")  # fmt: skip
    inner: dict[str, Any] = {k: v for k, v in body.items() if k not in ("anthropic_version", "anthropic_beta")}
    # Claude Code 2.1.328 sends `system` messages between the turns to Bedrock without naming the per-turn-control
    # beta in anthropic_beta (it does name it to Anthropic's API): taken as Bedrock's Claude takes them
    betas = ",".join([*(body.get("anthropic_beta") or []), PER_TURN_SYSTEM_BETA])
    response = await answer(state, entry, api, {**inner, "model": model}, {**headers, "anthropic-beta": betas},
                            session=session, stream=stream, framing=INVOKE)  # fmt: skip
    entry.body = body  # the log keeps what Bedrock received
    return response


def _invoke_refusal(body: dict[str, Any]) -> str | None:
    """InvokeModel's own checks of a Claude body before the Messages validation."""
    if "anthropic_version" not in body:
        return "#: required key [anthropic_version] not found"
    if body["anthropic_version"] not in ANTHROPIC_VERSIONS:
        return f"#/anthropic_version: {body['anthropic_version']} is not a valid enum value"
    for key in ("model", "stream"):
        if key in body:
            return f"#: extraneous key [{key}] is not permitted"
    beta = body.get("anthropic_beta")
    if beta is not None and not (isinstance(beta, list) and all(isinstance(b, str) for b in beta)):
        return "#/anthropic_beta: expected type: JSONArray"
    return None


def bedrock_routes(state: UpstreamState) -> list[Route]:
    def endpoint(operation: str) -> Any:
        async def run(request: Request) -> Response:
            return await handle(state, request, operation)

        return run

    return [
        Route(f"/model/{{model_id:path}}/{operation}", endpoint(operation), methods=["POST"])
        for operation in ("invoke", "invoke-with-response-stream", "converse", "converse-stream")
    ]
