"""What one provider is to mcp-offload: the `Provider` protocol, one implementation per package (`providers/<name>/`).

A provider is where an LLM API's requests are answered: the vendor's own endpoint (Anthropic, OpenAI, the Gemini
API) or a cloud that serves several APIs under paths of its own (Bedrock, Vertex AI, Azure OpenAI). An API
(`apis/<name>/`) is what a request body and its answer say; a provider is where it goes and how it gets there. One
API is served by several providers (Anthropic Messages by Anthropic, Bedrock and Vertex), and one provider serves
several APIs (OpenAI: Chat Completions and Responses), so neither package holds the other: a provider names the
APIs it serves (`apis`, `route`), and no API package imports a provider.

What the gateway asks of a provider, in the order of a request:

1. `route(request)`: is this request one of its API calls, and which (`ApiCall`: the API, the model and whether it
   streams when the path says so, the upstream path when it differs, how the answer is framed). `relay_claim`:
   for a request no provider routes, how surely it is for this provider's upstream (the highest claim wins).
2. `session_headers(request)`: the headers that scope a conversation (its credential; only the names in
   `credential_headers` are hashed, never stored).
3. `upstream` (the flag, environment variable and default of its base URL; None: no default, and a call for it
   gets `missing_upstream_error` in the provider's own error document) and `upstream_url(base, path, query)`.
4. `prepare(outgoing)`: the last word on what goes upstream (a cloud that signs requests signs the rewritten one
   here; the public providers send it as it is).
5. The answer: `ApiCall.framing` splits a streamed body into events and frames the gateway's own events back
   (SSE for the public APIs; AWS event-stream on Bedrock), so the API's `Dialect` reads events, never bytes.
6. `error_answer(api, status, code, message)`: a failure the gateway answers itself, in this provider's error
   document (the public providers: the API's own).
7. `cache_prices(api, model)`: the prompt-cache prices the rewrite's cost rule and the accounting use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.framing import SSE, Framing
from mcp_offload.providers.prices import CachePrices


@dataclass(frozen=True, slots=True)
class IncomingRequest:
    """What the gateway knows of a client's request before reading its body (header names lower-case)."""

    method: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ApiCall:
    """A request the gateway serves as one API call, and what the request line says of it (for the APIs that say
    it in the body: None)."""

    api: LlmApi
    model: str | None = None
    stream: bool | None = None
    # the path to send upstream (a cloud's path for the call); None: the client's own path
    upstream_path: str | None = None
    # a stream that is SSE only when the query carries `sse_query` (Gemini: `alt=sse`; without it one JSON array,
    # which the loop cannot splice): the path of the same call answered whole, for a turn the loop may run
    whole_path: str | None = None
    sse_query: tuple[str, str] | None = None
    framing: Framing = SSE


@dataclass(frozen=True, slots=True)
class UpstreamSetting:
    """Where a provider's requests go: the command line flag and environment variable that set its base URL (the
    gateway's and wrap's, made from these), and the default (None: the operator must set it)."""

    flag: str  # "--anthropic-upstream"
    env: str  # "MCP_OFFLOAD_ANTHROPIC_UPSTREAM"
    default: str | None
    help: str  # what the URL is, for --help ("Anthropic API base URL")

    @property
    def dest(self) -> str:
        """The flag as an argparse attribute name (`anthropic_upstream`)."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True, slots=True)
class OutgoingRequest:
    """One upstream request as the gateway is about to send it (`Provider.prepare` may return another)."""

    method: str
    url: str
    headers: Sequence[tuple[str, str]]
    content: bytes | None


class ProviderRefusal(Exception):
    """A request a provider cannot send as asked (`prepare`: e.g. Bedrock without botocore to sign it): the gateway
    answers it with `status` and the message, in the provider's error document."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """A failure the gateway answers itself, as the provider's clients read it."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = (("content-type", "application/json"),)


class Provider(Protocol):
    name: str  # the registry key and the word in logs ("anthropic", "openai", "gemini", "bedrock")
    title: str  # its name in messages to people ("Amazon Bedrock")
    apis: tuple[LlmApi, ...]  # the APIs it serves (for a vendor's own API: the API's home, see registry)
    credential_headers: tuple[str, ...]  # lower-case names of the headers that carry a credential

    @property
    def upstream(self) -> UpstreamSetting:
        """Its base URL's flag, variable and default (a class attribute, or read when asked: Bedrock's default is
        the region of the environment's AWS setup)."""
        ...

    def route(self, request: IncomingRequest) -> ApiCall | None:
        """The API call `request` is on this provider, else None."""
        ...

    def relay_claim(self, request: IncomingRequest) -> int:
        """How surely a request no provider routes (`/v1/models`, `/v1/files`, …) is for this provider's upstream:
        0 not at all; the highest claim wins (its own paths and key: 2, headers only its clients send: 1)."""
        ...

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        """The headers that scope the request's session (its credential; Gemini's `?key=` counts as one)."""
        ...

    def upstream_url(self, base: str, path: str, query: str) -> str:
        """The URL a request for `path` goes to under the configured `base`."""
        ...

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        """The request as it goes upstream (a signing cloud signs it here); the public providers return it."""
        ...

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        """A failure the gateway answers itself, for a call of `api` (None: a relayed request)."""
        ...

    def overloaded_status(self, api: LlmApi) -> int:
        """The status of this provider's "overloaded, retry later" answer to a call of `api` (its `error_answer`
        writes the document): what the gateway sheds a turn with when it has no room for it."""
        ...

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        """This provider's prompt-cache prices for `model` served through `api` (cite the source beside them)."""
        ...


def joined_url(base: str, path: str, query: str) -> str:
    """`path` under the configured `base` (its trailing slash dropped), with the `query` when there is one: the
    `upstream_url` of a provider whose paths need no rewriting."""
    url = base.rstrip("/") + path
    return f"{url}?{query}" if query else url
