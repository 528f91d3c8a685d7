"""What one LLM API is to mcp-offload: the `LlmApi` protocol, one implementation per package (`apis/<name>/`).

Each front end reads only this:

- the `Compactor` (and the compression service, the LiteLLM guardrail through the cache-safe rewrite): `messages`
  (read one message, replace a tool result's parts), `history` (the request body: where the messages and tools
  sit, what identifies a conversation, how expansions are put back), `tool_definition` (the injected tools' shape);
- the gateway: `paths` (where it is served), `provider` (whose upstream answers it), `dialect` (answers and streams
  in the retrieval loop), `error_document` / `stream_error_event` (failures in the client's own error format).

`format_name` is the word the `Compactor`'s public `format=` argument and report use for it.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName, Provider


class LlmApi(Protocol):
    name: ApiName
    format_name: str  # the Compactor's word (Chat Completions: "openai")
    paths: tuple[str, ...]  # the request paths the gateway serves it on
    provider: Provider  # whose upstream base URL the gateway sends it to
    messages: MessageFormat
    history: History
    dialect: Dialect

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        """One tool as this API's request takes it in `tools`."""
        ...

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        """The JSON error body this API's SDKs raise as their own error type."""
        ...

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        """The event that ends a stream the gateway cannot finish (upstream dropped, follow-up call failed)."""
        ...
