"""A handle the gateway stored that is gone: the retrieval answer names the tool call that produced it (from the
decision record), and `gone_handle` is the one reading of "gone" (the compression service's 404 uses it too)."""

from __future__ import annotations

from mcp_offload.cachesafe.record import Decision, open_record
from mcp_offload.cachesafe.retrieval import GoneHandle, gone_handle, run_retrieval
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.core import outputs
from mcp_offload.core.services import Services

DOC = "\n".join(f"line {i}: some log text" for i in range(400))


async def test_a_gone_handle_names_its_tool_call(services: Services) -> None:
    session = CacheSafeSession.of_key("ab" * 16)
    stored = await outputs.offload(services, session.scope, DOC, name="log")
    decision = Decision(handle=stored.handle, text="ref", call_id="toolu_42", tool="bash", tokens=5_000)
    await open_record(services).decide(session, {"digest-1": decision}, tools=True)
    assert await gone_handle(services, session, stored.handle) is None

    await services.store.delete(session.key, stored.handle)
    assert await gone_handle(services, session, stored.handle) == GoneHandle(decision)
    answer = await run_retrieval(services, session, "read_large_output", {"handle": stored.handle})
    assert answer.is_error
    assert answer.text.endswith(
        f"\n{stored.handle} held the result of tool call toolu_42 (bash), which is no longer stored. "
        "Run that tool again if you still need its output."
    )


async def test_no_note_without_a_record_or_for_other_errors(services: Services) -> None:
    session = CacheSafeSession.of_key("cd" * 16)
    stored = await outputs.offload(services, session.scope, DOC, name="log")
    bad_range = await run_retrieval(services, session, "read_large_output", {"handle": stored.handle, "start": -5})
    assert bad_range.is_error and "held the result" not in bad_range.text
    await services.store.delete(session.key, stored.handle)
    assert await gone_handle(services, session, stored.handle) == GoneHandle(None)
    unrecorded = await run_retrieval(services, session, "read_large_output", {"handle": stored.handle})
    assert unrecorded.is_error and "held the result" not in unrecorded.text
    malformed = await run_retrieval(services, session, "read_large_output", {"handle": "nope"})
    assert malformed.is_error and "held" not in malformed.text
