"""`AdminStore.scan()`: every scope's live outputs with their lifecycle times, on both backends."""

from __future__ import annotations

from mcp_offload.store.lifecycle import StoreLimits
from support.store import SCOPE_A, SCOPE_B, FakeClock, StoreFactory, put_bytes


async def test_scan_sees_every_scope_with_lifecycle_times(make_store: StoreFactory) -> None:
    clock = FakeClock()
    store = make_store(clock=clock, limits=StoreLimits(ttl_s=3600))
    a = await put_bytes(store, SCOPE_A, b"alpha\n" * 100, name="a")
    b = await put_bytes(store, SCOPE_B, b"beta\n" * 10, name="b")
    scanned = {o.meta.handle: o for o in await store.scan()}
    assert set(scanned) == {a, b}
    assert (scanned[a].scope, scanned[a].meta.name, scanned[a].meta.size) == (SCOPE_A, "a", 600)
    assert scanned[b].scope == SCOPE_B
    assert scanned[a].last_used is None  # never opened
    assert abs(scanned[a].expires - (clock.now + 3600)) < 2

    clock.advance(60)
    async with store.open(SCOPE_A, a) as out:
        assert out.read_bytes(0, 5) == b"alpha"
    scanned = {o.meta.handle: o for o in await store.scan()}
    last_used = scanned[a].last_used
    assert last_used is not None and abs(last_used - clock.now) < 2
    assert scanned[b].last_used is None

    await store.delete(SCOPE_B, b)
    assert [o.meta.handle for o in await store.scan()] == [a]

    clock.advance(3600)  # expired, not yet swept: hidden unless asked for
    assert await store.scan() == []
    assert [o.meta.handle for o in await store.scan(expired=True)] == [a]
    report = await store.sweep()
    assert report.expired == 1 and await store.scan(expired=True) == []
