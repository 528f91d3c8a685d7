"""Deterministic handles: `derived_handle` (keyed hash, handle grammar), publishing under a given handle on both
backends (`HandleExists` for the second writer, nothing half-written), and idempotent ingest under a derived
handle (the gateway's instances racing on one result keep one output)."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.core import outputs
from mcp_offload.core.services import Services
from mcp_offload.errors import HandleExists
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.handles import derived_handle, handles_in, new_handle, scope_key, validate_handle
from support.store import SCOPE_A, SCOPE_B, StoreFactory, make_meta


@given(key=st.text(max_size=80), parts=st.lists(st.text(max_size=200), max_size=4))
def test_derived_handles_follow_the_grammar_and_are_deterministic(key: str, parts: list[str]) -> None:
    handle = derived_handle(key, *parts)
    assert validate_handle(handle) == handle
    assert derived_handle(key, *parts) == handle


def test_derived_handles_depend_on_the_key_and_every_part_unambiguously() -> None:
    base = derived_handle(scope_key("a"), "x", "y")
    assert derived_handle(scope_key("b"), "x", "y") != base
    assert derived_handle(scope_key("a"), "xy") != base
    assert derived_handle(scope_key("a"), "x", "y", "") != base
    assert derived_handle(scope_key("a"), "x\x00", "y") != derived_handle(scope_key("a"), "x", "\x00y")


async def test_a_second_put_under_the_same_handle_is_refused_and_changes_nothing(make_store: StoreFactory) -> None:
    store = make_store()
    data = b"first content\n"
    meta = replace(make_meta(data), handle=derived_handle(SCOPE_A, "same"))
    await store.put(SCOPE_A, meta, ContentIndex.build(data), data)
    other = b"other content, longer\n"
    with pytest.raises(HandleExists):
        await store.put(SCOPE_A, replace(make_meta(other), handle=meta.handle), ContentIndex.build(other), other)
    async with store.open(SCOPE_A, meta.handle) as out:
        assert out.read_bytes(0, len(data) + 10) == data
    assert [m.handle for m in await store.list(SCOPE_A)] == [meta.handle]
    # another scope may hold the same handle string: scopes are apart
    await store.put(SCOPE_B, replace(make_meta(other), handle=meta.handle), ContentIndex.build(other), other)


async def test_racing_puts_under_one_handle_keep_one_output(make_store: StoreFactory) -> None:
    store = make_store()
    handle = derived_handle(SCOPE_A, "race")
    outcomes: list[str] = []

    async def put(n: int) -> None:
        data = f"same content {'x' * 1000}\n".encode()
        try:
            await store.put(SCOPE_A, replace(make_meta(data), handle=handle), ContentIndex.build(data), data)
            outcomes.append("stored")
        except HandleExists:
            outcomes.append("exists")

    async with anyio.create_task_group() as tg:
        for n in range(6):
            tg.start_soon(put, n)
    assert outcomes.count("stored") == 1 and outcomes.count("exists") == 5
    assert len(await store.list(SCOPE_A)) == 1


async def test_ingest_under_a_derived_handle_is_idempotent(services: Services) -> None:
    scope = outputs.SessionScope.named("derived")
    handle = derived_handle(scope.key, "content-digest")
    first = await outputs.offload(services, scope, "hello " * 500, name="one", handle=handle)
    second = await outputs.offload(services, scope, "hello " * 500, name="two", handle=handle)
    assert first.handle == second.handle == handle
    assert len((await outputs.list_outputs(services, scope)).outputs) == 1
    read = await outputs.read(services, scope, handle)
    assert read.text.startswith("hello hello")
    with pytest.raises(Exception, match="not a valid handle"):
        await outputs.offload(services, scope, "x", handle="../etc/passwd")


def test_handles_in_finds_whole_handles_once_each_in_order() -> None:
    a, b = new_handle(), new_handle()
    text = f"read {b}, then {a}; again {b}. Not x{a} nor {a}x nor {a.upper()} nor out_{'1' * 26}."
    assert handles_in(text) == [b, a]
    assert len(handles_in(" ".join(new_handle() for _ in range(10)), limit=3)) == 3
    assert handles_in("no handle here: out_abc") == []
