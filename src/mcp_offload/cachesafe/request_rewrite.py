"""Rewrite one LLM API request cache-safely: the cache-safe core (`cachesafe.rewrite`) over the request's message
list, plus the retrieval tools appended to the request's own.

    rewrite = await rewrite_request(services, "anthropic", body, headers, RewritePolicy())
    send(rewrite.body)   # `body` itself (the same object: forward the client's bytes) when rewrite.changed is False

The rules are `cachesafe.rewrite`'s. Here: the session is derived from the request (`cachesafe.session`); handles
stored are added to the credential's index, and a session without the tools gets them from a request that mentions
a handle of its credential (`handle_reach`: sub-agents); a request
without a message list (or with a message that is not an object) is forwarded as is, for the upstream to answer; a
store failure gives `Rewrite(changed=False, fail_open=reason)` (the original body, nothing recorded) or, with
`fail_closed`, raises `RewriteUnavailable`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.cachesafe.handle_reach import mentions_known_handle, remember
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.rewrite import MessagesRewrite, json_chars, rewrite_messages
from mcp_offload.cachesafe.session import CacheSafeSession, derive_session
from mcp_offload.cachesafe.tool_text import retrieval_tools
from mcp_offload.core.services import Services
from mcp_offload.errors import StoreError
from mcp_offload.providers.base import Provider

__all__ = ["Rewrite", "RewriteUnavailable", "rewrite_request"]

log = logging.getLogger("mcp_offload.gateway")


@dataclass(slots=True)
class Rewrite:
    body: dict[str, Any]  # what to send upstream (the very input object when `changed` is False)
    changed: bool
    session: CacheSafeSession
    tools_injected: bool = False  # the retrieval tools are in `body["tools"]`
    offloaded: list[str] = field(default_factory=list)  # handles newly offloaded this turn
    tokens_kept_out: int = 0  # tool result tokens this request does not carry (references' tokens subtracted)
    tokens_offloaded: int = 0  # tokens of the outputs newly offloaded this turn (TurnCounters.tokens_offloaded)
    fail_open: str | None = None  # why the original body is sent unmodified (the store failed)
    expanded: int = 0  # model responses restored from expansions
    bypassed: bool = False  # the session is forwarded as is (the upstream refused a rewritten request once)


class RewriteUnavailable(Exception):
    """The store is down and the policy is fail-closed: answer the request with an API error (503)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def rewrite_request(
    services: Services,
    api: LlmApi,
    body: dict[str, Any],
    headers: Mapping[str, str],
    policy: RewritePolicy,
    *,
    model: str | None = None,
    provider: Provider | None = None,
) -> Rewrite:
    """The request to send upstream for `body` (see the module docstring for the rules); `model` when the body does
    not name it (Gemini: the path does); `provider`, where it goes (its cache prices; default: the API's home)."""
    history = api.history
    session = derive_session(api, body, headers)
    messages = history.messages(body)
    if messages is None:
        return Rewrite(body=body, changed=False, session=session)

    def head() -> int:  # measured only when a prefix rule needs it: walking a large tools array costs ~0.3 ms
        return json_chars({k: v for k, v in body.items() if k != history.messages_key})

    try:
        done = await rewrite_messages(
            services,
            api,
            session,
            messages,
            policy,
            model=model or body.get("model"),
            provider=provider,
            head_chars=head,
        )
    except ValueError:
        return Rewrite(body=body, changed=False, session=session)  # the upstream answers it with its own error
    except StoreError as exc:
        reason = f"the store failed ({type(exc).__name__}: {exc})"
        log.warning("gateway: %s; forwarding the request unmodified", reason)
        if policy.fail_closed:
            raise RewriteUnavailable(reason) from exc
        return Rewrite(body=body, changed=False, session=session, fail_open=reason)
    handed = await _handed_a_handle(services, session, body, policy, done)
    tools_on = done.tools_on or handed
    out = history.with_messages(body, done.messages) if done.changed else body
    if tools_on:
        out = history.with_tools(out, retrieval_tools(api))
    if out is body:
        return Rewrite(body=body, changed=False, session=session, bypassed=done.bypassed)
    return Rewrite(
        body=out,
        changed=True,
        session=session,
        tools_injected=tools_on,
        offloaded=done.offloaded,
        tokens_kept_out=done.tokens_kept_out,
        tokens_offloaded=done.tokens_offloaded,
        expanded=done.expanded,
    )


async def _handed_a_handle(
    services: Services,
    session: CacheSafeSession,
    body: Mapping[str, Any],
    policy: RewritePolicy,
    done: MessagesRewrite,
) -> bool:
    """Record the handles this turn stored in the credential's index; then, for a session without the retrieval
    tools, whether the request mentions a handle of the credential (a sub-agent handed its parent's handle): the
    tools are turned on for the session, recorded and sticky (`handle_reach`). A store failure here only delays
    that: logged, the request goes on."""
    try:
        await remember(services, session, done.offloaded)
        if done.tools_on or done.bypassed or policy.retrieval != "transparent":
            return False
        if not await mentions_known_handle(services, session, body):
            return False
        await open_record(services).decide(session, {}, tools=True)
    except StoreError as exc:
        log.warning("gateway: the credential's handle index failed (%s: %s)", type(exc).__name__, exc)
        return False
    return True
