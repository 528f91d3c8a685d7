"""Run one of the gateway's retrieval tool calls for a session, exactly as the MCP server runs it, and never raise.

The call goes through the core tool pipeline (`core/pipeline.run_tool`: the tools' own validation, rendering and
error answers), over the session's scope (or, for a handle another conversation of the same credential stored, that
conversation's: `handle_reach`), so the model reads the same text from the gateway as from the MCP server.
Arguments may be an object or a JSON text (Chat Completions and Responses carry them as a string). Anything wrong
(an unknown tool, arguments that are not a JSON object, a malformed or unknown handle, a failing store) comes back
as `is_error` with a message for the model. When the handle was stored by this gateway and is now expired or gone,
the message names the tool call whose result it was (from the decision record), so the model can run that tool
again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from mcp_offload.cachesafe.handle_reach import reach
from mcp_offload.cachesafe.record import Decision, open_record
from mcp_offload.cachesafe.rewrite import PASTE_CALL_ID
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES
from mcp_offload.core.pipeline import run_tool
from mcp_offload.core.services import Services
from mcp_offload.core.tools import TOOLS_BY_NAME, CallContext
from mcp_offload.errors import ExpiredHandle, OffloadError, UnknownHandle
from mcp_offload.store.handles import validate_handle

log = logging.getLogger("mcp_offload.gateway")
MAX_ARGUMENT_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class RetrievalAnswer:
    text: str  # what the model reads as the tool result
    is_error: bool
    tokens: int  # tokens of `text` (pulled back into the conversation)


def _arguments(raw: Any) -> dict[str, Any] | str:
    """The arguments as an object, or the error text."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        if len(raw) > MAX_ARGUMENT_CHARS:
            return f"The arguments are {len(raw):,} characters long; they must be a small JSON object."
        try:
            raw = json.loads(raw)
        except ValueError:
            return 'The arguments are not valid JSON; pass a JSON object such as {"handle": "out_…"}.'
    if not isinstance(raw, dict):
        return f"The arguments must be a JSON object, not {type(raw).__name__}."
    return raw


@dataclass(frozen=True, slots=True)
class GoneHandle:
    """A handle no longer stored in its session (expired, evicted, deleted), and the decision that stored it when the
    record knows it (which tool call produced the output)."""

    producer: Decision | None


async def gone_handle(services: Services, session: CacheSafeSession, handle: str) -> GoneHandle | None:
    """None while `handle` is stored in `session`; what the record knows of it once it is gone. The gateway's one
    reading of "that handle is gone" (retrieval answers here, the compression service's 404). Raises the store's
    other errors (`StoreError`)."""
    try:
        await services.store.meta(session.key, handle)
        return None
    except (UnknownHandle, ExpiredHandle):
        return GoneHandle(await open_record(services).producer(session, handle))


async def _producer_note(services: Services, session: CacheSafeSession, handle: Any) -> str:
    """' It held the result of tool call X (tool) …' when the handle is gone and the record knows its producer."""
    try:
        gone = await gone_handle(services, session, validate_handle(handle))
    except OffloadError:  # an invalid handle, a failing store: no note
        return ""
    decision = gone.producer if gone is not None else None  # None: the output is there, the error was another
    if decision is None:
        return ""
    if decision.call_id == PASTE_CALL_ID:
        return f"\n{handle} held a text the user wrote earlier in this conversation; it is no longer stored."
    tool = f" ({decision.tool})" if decision.tool else ""
    return (
        f"\n{handle} held the result of tool call {decision.call_id}{tool}, which is no longer stored. "
        "Run that tool again if you still need its output."
    )


async def run_retrieval(services: Services, session: CacheSafeSession, name: str, arguments: Any) -> RetrievalAnswer:
    """Run `name` (one of `RETRIEVAL_TOOL_NAMES`) with `arguments` in `session`; errors are answers, never raised."""

    def answer(text: str, is_error: bool) -> RetrievalAnswer:
        return RetrievalAnswer(text=text, is_error=is_error, tokens=services.tokens.count(text))

    if name not in RETRIEVAL_TOOL_NAMES:
        known = ", ".join(sorted(RETRIEVAL_TOOL_NAMES))
        return answer(f"Unknown tool {str(name)[:80]!r}. The retrieval tools here are: {known}.", True)
    args = _arguments(arguments)
    if isinstance(args, str):
        return answer(f"Invalid arguments for {name}: {args}", True)
    try:
        scope = await reach(services, session, args)
        if scope != session.scope:  # a handle of another conversation of the credential (a parent agent's)
            session = CacheSafeSession(key=scope.key, scope=scope, credential=session.credential)
        result = await run_tool(TOOLS_BY_NAME[name], CallContext(services, scope), args)
        text = result.text
        if result.is_error and "handle" in args:
            text += await _producer_note(services, session, args["handle"])
        return answer(text, result.is_error)
    except Exception:
        log.exception("gateway retrieval %s failed", name)
        return answer(f"{name} failed unexpectedly in the gateway; nothing was changed. Try again.", True)
