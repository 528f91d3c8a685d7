"""Which conversation ("session") a gateway request belongs to; its store scope.

The LLM APIs carry no session id, so the gateway derives one from what every request of a conversation sends alike:

1. An explicit header `x-mcp-offload-session: NAME` wins. Its scope is `SessionScope.named(NAME)`, the very scope of
   `mcp-offload --session NAME` and `Compactor(session=NAME)`: in visible mode the agent's own mcp-offload MCP server
   started with that name reads the handles the gateway stored. A header that is not a valid session name
   (1-200 printable characters) is ignored, as if absent.
2. Otherwise: the API, a SHA-256 of the credential (the headers every provider names in `credential_headers`:
   `x-api-key`, `authorization`, `api-key`, `x-goog-api-key`, …; hashed at once, never stored, never logged) and a
   SHA-256 of the conversation's first messages in normalized form (`apis.history.normalized`: key order, nulls
   and `cache_control` markers do not matter), namely
   - Anthropic: `system` + the first message;
   - Chat Completions: the leading system/developer messages + the first other message;
   - Responses: `instructions` + the input items up to and including the first user message (a string input is
     that message). A request continuing a stored response (`previous_response_id`) has no first message: its
     session is the credential + `instructions` (send the header to keep such chains apart).

Forks and shared prefixes: two conversations that open with the same system prompt and first user message under the
same credential are one session. That is harmless and consistent: decisions are keyed by content (tool call id +
SHA-256 of the result), so the same result gets the same handle and replacement bytes in both branches (their shared
prefix stays byte-identical and keeps hitting the provider's cache), and different results never collide. The only
session-wide fact is "the retrieval tools are on": once either branch offloads, the other gets the tools from its
next request on (one change of its tools array, then stable). A conversation forked from the middle of another one
(same first messages, edited later turn) is the same session for the same reason. Agents that open many
conversations with identical first messages and want them apart send the header.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.history import canonical_bytes, normalized
from mcp_offload.core.outputs import SessionScope
from mcp_offload.providers.registry import credential_headers
from mcp_offload.store.handles import scope_key

SESSION_HEADER = "x-mcp-offload-session"


@dataclass(frozen=True, slots=True)
class CacheSafeSession:
    """A conversation as the gateway knows it: `key` (32 hex chars, a hash; also the store scope key) and `scope`."""

    key: str
    scope: SessionScope
    explicit: bool = False  # named by the x-mcp-offload-session header
    # SHA-256 of the request's credential headers (`credential_digest`); "" when unknown. Who is asking, not which
    # conversation: two credentials naming one session by the header are the same session.
    credential: str = field(default="", compare=False)

    @classmethod
    def of_key(cls, key: str) -> CacheSafeSession:
        """The session with this key (e.g. from `Rewrite.session.key`, kept by the server for a follow-up call)."""
        return cls(key=key, scope=SessionScope(key))


def _lowered(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


def credential_digest(headers: Mapping[str, str]) -> str:
    """SHA-256 of the credential headers present (or of nothing): the credential itself is never kept."""
    found = _lowered(headers)
    material = "\x00".join(f"{h}={found[h]}" for h in credential_headers() if h in found)
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def derive_session(api: LlmApi, body: Mapping[str, Any], headers: Mapping[str, str]) -> CacheSafeSession:
    """The session of a request (see the module docstring for the rule)."""
    name = _lowered(headers).get(SESSION_HEADER)
    credential = credential_digest(headers)
    if name is not None:
        try:
            scope = SessionScope.named(name.strip())
        except ValueError:
            pass
        else:
            return CacheSafeSession(key=scope.key, scope=scope, explicit=True, credential=credential)
    opening = api.history.opening(body)
    digest = hashlib.sha256(canonical_bytes(normalized(opening))).hexdigest()
    key = scope_key(f"gateway:{api.name}:{credential}:{digest}")
    return CacheSafeSession(key=key, scope=SessionScope(key), credential=credential)
