"""What one LLM API is to mcp-offload: the `LlmApi` protocol, one implementation per package (`apis/<name>/`).

Each front end reads only this:

- the `Compactor` (and the compression service, the LiteLLM guardrail through the cache-safe rewrite): `messages`
  (read one message, replace a tool result's parts), `history` (the request body: where the messages and tools
  sit, what identifies a conversation, how expansions are put back), `tool_definitions` (the injected tools'
  shape);
- the gateway: `dialect` (answers and streams in the retrieval loop), `single_choice`, `asking_stream_usage`,
  `with_cache_breakpoints`, `error_document` / `stream_error_event` (failures in the client's own error format);
  where a request goes and which paths are this API's calls is a provider's (`mcp_offload.providers`);
- `wrap --api NAME -- CMD`: `client_env` (the variables that point a generic client of the API at the gateway).

`name` is the API's one word everywhere (the `Compactor`'s `format=`, the compression service's `format`, `wrap
--api`, logs, record keys); `aliases` are the other words a caller may write for it, accepted only at the public
boundary (`registry.api_named`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName


@dataclass(frozen=True, slots=True)
class ToolDeclaration:
    """One tool, API-neutral: what every API's tool definition is made of."""

    name: str
    description: str
    input_schema: dict[str, Any]


class LlmApi(Protocol):
    name: ApiName
    aliases: tuple[str, ...]  # other words callers may use for it ("openai", "chat"); resolved at the boundary only
    title: str  # its name in messages to people ("OpenAI Chat Completions")
    relays_unreadable: bool  # a body that is not a JSON object goes upstream as is (else: a 400 of our own)
    # the status of the API's own "overloaded, retry later" answer, which its SDKs raise as their overload error
    # (and retry, honouring Retry-After): what the gateway answers when it sheds a turn it has no room for
    overloaded_status: int
    # LiteLLM's call types for a request of this API (its guardrail's `call_type`; empty: LiteLLM's guardrail hooks
    # do not serve it), and the field whose list marks one of its answers among LiteLLM's response objects
    litellm_call_types: tuple[str, ...]
    answer_field: str
    messages: MessageFormat
    history: History
    dialect: Dialect

    def single_choice(self, request: dict[str, Any]) -> bool:
        """The request asks for one answer (Chat's `n`, Gemini's `generationConfig.candidateCount`): only then may
        the retrieval loop run."""
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

    def client_env(self, gateway: str) -> dict[str, str]:
        """The environment variables that point a generic client of this API (its SDK's conventions) at a gateway
        at `gateway` (http://host:port, no path): what `wrap --api NAME -- CMD` sets."""
        ...
