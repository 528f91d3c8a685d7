"""What one LLM API is to mcp-offload: the `LlmApi` protocol, one implementation per package (`apis/<name>/`).

Each front end reads only this:

- the `Compactor` (and the compression service, the LiteLLM guardrail through the cache-safe rewrite): `messages`
  (read one message, replace a tool result's parts), `history` (the request body: where the messages and tools
  sit, what identifies a conversation, how expansions are put back), `tool_definitions` (the injected tools'
  shape);
- the gateway: `route` (is a request this API's, and what its path says), `provider` (whose upstream answers it),
  `session_headers` (what scopes its session), `dialect` (answers and streams in the retrieval loop),
  `error_document` / `stream_error_event` (failures in the client's own error format).

`format_name` is the word the `Compactor`'s public `format=` argument and report use for it (None: the Compactor
does not offer it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName, Provider

DEFAULT_PROVIDER: Provider = "openai"  # a relayed request no API claims (OpenAI-compatible servers share its paths)


@dataclass(frozen=True, slots=True)
class Route:
    """A request the gateway serves as an API call, with what its path says (Gemini names the model and whether it
    streams in the path; the others in the body: None)."""

    model: str | None = None
    stream: bool | None = None
    # a stream that is SSE only when the query carries `sse_query` (Gemini: `alt=sse`; without it one JSON array,
    # which the loop cannot splice): the path of the same call answered whole, for a turn the loop may run
    whole_path: str | None = None
    sse_query: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """One tool, API-neutral: what every API's tool definition is made of."""

    name: str
    description: str
    input_schema: dict[str, Any]


class LlmApi(Protocol):
    name: ApiName
    format_name: str | None  # the Compactor's word (Chat Completions: "openai"); None: not offered there
    title: str  # its name in messages to people ("OpenAI Chat Completions")
    provider: Provider  # whose upstream base URL the gateway sends it to
    relays_unreadable: bool  # a body that is not a JSON object goes upstream as is (else: a 400 of our own)
    # its usage counts cache reads apart from the input tokens (Anthropic's `cache_read_input_tokens`), not among
    # them (OpenAI's and Gemini's `cached_tokens`): which session counter they are added to
    cache_reads_apart: bool
    messages: MessageFormat
    history: History
    dialect: Dialect

    def route(self, method: str, path: str) -> Route | None:
        """The route when the gateway serves `method path` as this API's call, else None."""
        ...

    def relay_claim(self, path: str, headers: Mapping[str, str], query: str) -> int:
        """How surely a request on a path the gateway relays (`/v1/models`, `/v1/files`, …) is for this API's
        provider: 0 not at all; the highest claim wins (its own paths and key: 2, headers only its clients send:
        1); a request none claims goes to `DEFAULT_PROVIDER`."""
        ...

    def single_choice(self, request: dict[str, Any]) -> bool:
        """The request asks for one answer (Chat's `n`, Gemini's `generationConfig.candidateCount`): only then may
        the retrieval loop run."""
        ...

    def session_headers(self, headers: Mapping[str, str], query: str) -> Mapping[str, str]:
        """The headers that scope a request's session (its credential; Gemini's `?key=` counts as one)."""
        ...

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        """`body` (what goes upstream for the client's `request`) asking for the usage a stream leaves out unless
        asked (Chat Completions: `stream_options.include_usage`); None when the client asked or the API always
        reports it."""
        ...

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with prompt-cache markers for a client that set none (Anthropic caches only up to a marker);
        `body` itself when there is nothing to do."""
        ...

    def tool_definitions(self, tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
        """`tools` as this API's request takes them in `tools`."""
        ...

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        """The JSON error body this API's SDKs raise as their own error type."""
        ...

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        """The event that ends a stream the gateway cannot finish (upstream dropped, follow-up call failed)."""
        ...
