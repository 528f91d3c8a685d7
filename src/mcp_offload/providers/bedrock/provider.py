"""Amazon Bedrock as one `Provider`: the bedrock-runtime operations that carry a conversation.

    POST /model/{modelId}/invoke                       Anthropic Messages (Claude), answered whole
    POST /model/{modelId}/invoke-with-response-stream  the same, streamed in event-stream `chunk` frames
    POST /model/{modelId}/converse                     the Converse API (apis/converse), answered whole
    POST /model/{modelId}/converse-stream              the same, one event-stream frame per event
    anything else under /model/… (count-tokens, …)     relayed to Bedrock untouched

The InvokeModel body is the Messages body with `anthropic_version` (and `anthropic_beta`) in it and the model and
`stream` in the path; the Anthropic API package reads it as it is. Streams are framed by `eventstream.py`.

**The upstream**: `--bedrock-upstream URL` / `MCP_OFFLOAD_BEDROCK_UPSTREAM`, by default
`https://bedrock-runtime.<region>.amazonaws.com` for the region in `AWS_REGION` (or `AWS_DEFAULT_REGION`) of the
gateway's environment; with neither, a Bedrock call gets Bedrock's own error document naming the setting.

**Credentials** (`signing.py`): the gateway signs what it sends with its own AWS credentials from botocore's
standard chain (environment, profile, SSO, container or instance role), since a rewritten body breaks the client's
signature; a Bedrock API key (`Authorization: Bearer`) goes upstream untouched; with no credentials of its own the
gateway relays the request as the client signed it. A client's SigV4 identity is not checked by the gateway (it
cannot be: the secret stays with the client), so whoever reaches the gateway uses its AWS identity: bind it to
loopback (the default) or require `--token`.

**Sessions**: a SigV4 signature changes with every request and temporary keys rotate hourly, so a signed request's
session is its conversation's opening (and `x-mcp-offload-session` where given), not its key; a Bedrock API key
scopes its sessions as any API key does.

**Prices** (Claude on Bedrock, the Bedrock pricing page https://aws.amazon.com/bedrock/pricing/ and the prompt
caching guide https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, checked 2026-11): a cache
write costs 1.25x the input price (5-minute TTL; 2x for the 1-hour TTL), a cache read 0.1x, as on Anthropic's API;
checkpoints need at least 1,024 tokens (Claude Sonnet and Opus) and at most 4 are allowed. Converse and InvokeModel
cache alike (cachePoint blocks / cache_control markers).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import quote

import orjson

from mcp_offload.apis.anthropic import ANTHROPIC_MESSAGES
from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.converse import CONVERSE
from mcp_offload.apis.converse.errors import error_headers
from mcp_offload.providers.base import (
    ApiCall,
    ErrorAnswer,
    IncomingRequest,
    OutgoingRequest,
    ProviderRefusal,
    UpstreamSetting,
    joined_url,
)
from mcp_offload.providers.bedrock import eventstream
from mcp_offload.providers.bedrock.signing import MISSING_BOTOCORE, AwsSigner, botocore_available
from mcp_offload.providers.prices import CachePrices

FIVE_MINUTES = CachePrices("bedrock claude 5-minute cache", write=1.25, read=0.10)
_OPERATION = re.compile(
    r"^/model/(?P<model>[^/].*)/(?P<op>invoke|invoke-with-response-stream|converse|converse-stream)$"
)


def default_upstream(environ: Mapping[str, str]) -> str | None:
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    return f"https://bedrock-runtime.{region}.amazonaws.com" if region else None


class BedrockProvider:
    name = "bedrock"
    title = "Amazon Bedrock"
    apis: tuple[LlmApi, ...] = (ANTHROPIC_MESSAGES, CONVERSE)
    credential_headers: tuple[str, ...] = ("authorization",)

    def __init__(self) -> None:
        self.signer = AwsSigner()

    @property
    def upstream(self) -> UpstreamSetting:
        """The setting, its default read from the environment when asked (the region of the gateway's AWS setup)."""
        return UpstreamSetting(
            "--bedrock-upstream",
            "MCP_OFFLOAD_BEDROCK_UPSTREAM",
            default_upstream(os.environ),
            "Amazon Bedrock runtime URL; unset, https://bedrock-runtime.<region>.amazonaws.com for AWS_REGION",
        )

    def route(self, request: IncomingRequest) -> ApiCall | None:
        found = _OPERATION.match(request.path) if request.method == "POST" else None
        if found is None:
            return None
        model, operation = found.group("model"), found.group("op")
        upstream_path = f"/model/{quote(model, safe='')}/{operation}"  # as boto3 sends it: the model id one segment
        stream = operation.endswith("stream")
        api = CONVERSE if operation.startswith("converse") else ANTHROPIC_MESSAGES
        if not stream:
            return ApiCall(api, model=model, stream=False, upstream_path=upstream_path)
        framing = eventstream.CONVERSE if api is CONVERSE else eventstream.INVOKE
        return ApiCall(api, model=model, stream=True, upstream_path=upstream_path, framing=framing)

    def relay_claim(self, request: IncomingRequest) -> int:
        return 2 if request.path.startswith("/model/") or request.path.startswith("/async-invoke") else 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        authorization = request.headers.get("authorization", "")
        return {"authorization": authorization} if authorization.lower().startswith("bearer ") else {}

    def upstream_url(self, base: str, path: str, query: str) -> str:
        return joined_url(base, path, query)

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        authorization = next((v for n, v in outgoing.headers if n == "authorization"), "")
        if authorization.lower().startswith("bearer "):
            return outgoing  # a Bedrock API key signs nothing: it goes as the client sent it
        if not botocore_available():
            raise ProviderRefusal(501, "botocore_missing", MISSING_BOTOCORE)
        signed = await self.signer.sign(outgoing.method, outgoing.url, outgoing.headers, outgoing.content)
        if signed is None:
            return outgoing  # no credentials of our own: relayed as the client signed it
        return OutgoingRequest(outgoing.method, outgoing.url, signed, outgoing.content)

    def overloaded_status(self, api: LlmApi) -> int:
        # ServiceUnavailableException, for Converse and InvokeModel alike (Bedrock's errors, not the model's API's)
        return 503

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        return ErrorAnswer(status, orjson.dumps({"message": message}), error_headers(status))

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return FIVE_MINUTES
