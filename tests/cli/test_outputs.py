"""`mcp-offload outputs …` as a real subprocess, on the filesystem and Redis backends, while a real stdio server
process (the real MCP client) keeps writing into the same store."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_offload.mcp_server.tools import result_of
from support import text_of
from support.store import RedisServer, have_redis_server

EXE = str(Path(sys.executable).with_name("mcp-offload"))


@pytest.fixture(params=["fs", "redis"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "fs":
        yield str(tmp_path / "store")
        return
    if not have_redis_server():
        pytest.skip("redis-server is not installed, so `outputs` on Redis is NOT tested")
    server = RedisServer().start()  # its own server: the CLI and the server process use the default key prefix
    try:
        yield server.url
    finally:
        server.stop()


def _server(location: str, *extra: str) -> StdioServerParameters:
    env = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent"}
    return StdioServerParameters(command=EXE, args=["--store", location, "--no-config", *extra], env=env)


async def _cli(location: str, *argv: str, env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    done = await anyio.run_process(
        [EXE, "outputs", *argv[:1], "--store", location, *argv[1:]],
        check=False,
        env={**os.environ, **(env or {})},
        stdin=None,
    )
    return done.returncode, done.stdout, done.stderr.decode()


async def _listing(location: str, *flags: str) -> list[dict[str, Any]]:
    code, out, err = await _cli(location, "list", "--json", *flags)
    assert code == 0, err
    return list(json.loads(out))


async def test_outputs_commands_while_a_server_writes(location: str) -> None:
    doc = json.dumps({"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(400)]})
    log = "".join(f"{i} log line\n" for i in range(3000))
    async with Client(_server(location), read_timeout_seconds=60) as alice, Client(_server(location)) as bob:
        r_doc = await alice.call_tool("offload", {"content": doc, "name": "items"})
        r_log = await alice.call_tool("offload", {"content": log, "name": "log"})
        h_doc, h_log = result_of(r_doc)["handle"], result_of(r_log)["handle"]
        h_bob = result_of(await bob.call_tool("offload", {"content": "bob's\n" * 2000}))["handle"]
        written: list[str] = []
        stop = anyio.Event()

        async def keep_writing() -> None:
            # at most 60 outputs (each ingest costs the server CPU the CLI runs need): the session's quota is 1,000
            # (LRU beyond), and on a loaded machine the commands below may take minutes, which must not evict bob's
            # first output
            while not stop.is_set() and len(written) < 60:
                r = await bob.call_tool("offload", {"content": f"{len(written)}\n" * 5000, "name": "churn"})
                written.append(result_of(r)["handle"])
                await anyio.sleep(0.25)  # steady writes, a few during each CLI run, without starving them

        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_writing)
            listed = {o["handle"]: o for o in await _listing(location)}
            assert {h_doc, h_log, h_bob} <= set(listed)
            assert listed[h_doc]["name"] == "items" and listed[h_doc]["kind"] == "json"
            assert listed[h_doc]["bytes"] == len(doc.encode()) and listed[h_doc]["last_read"] is None
            alice_session = listed[h_doc]["session"]
            assert listed[h_log]["session"] == alice_session != listed[h_bob]["session"]
            only_alice = await _listing(location, "--session", alice_session[:12])
            assert {o["handle"] for o in only_alice} == {h_doc, h_log}
            assert await _listing(location, "--older-than", "1h") == []
            assert len(await _listing(location, "--newer-than", "1h")) >= 3

            code, out, err = await _cli(location, "list")
            assert code == 0 and h_doc in out.decode() and alice_session[:12] in out.decode()

            # show: metadata, then the reference exactly as the model saw it; --raw: the exact bytes
            code, out, err = await _cli(location, "show", h_doc)
            assert code == 0, err
            head, seen = out.decode().split("--- what the model saw ---\n")
            assert seen.rstrip("\n") == text_of(r_doc) and f"session    {alice_session}" in head
            code, out, _ = await _cli(location, "show", h_log, "--raw")
            assert code == 0 and out == log.encode()

            # rm: unknown or malformed handles touch nothing
            before = {o["handle"] for o in await _listing(location)}
            for bad in ("out_" + "a" * 26, "../../etc/passwd", "out_x"):
                code, _, err = await _cli(location, "rm", h_log, bad)
                assert code == 1 and err.startswith("mcp-offload: ") and err.count("\n") == 1
            assert before <= {o["handle"] for o in await _listing(location)}
            code, out, _ = await _cli(location, "rm", h_log)
            assert code == 0 and f"removed {h_log}" in out.decode()
            r = await alice.call_tool("read_large_output", {"handle": h_log})
            assert r.is_error

            # clear: refused without a terminal or --yes; then one session only
            code, _, err = await _cli(location, "clear", "--session", alice_session[:8])
            assert code == 1 and "--yes" in err
            assert any(o["handle"] == h_doc for o in await _listing(location))
            code, out, _ = await _cli(location, "clear", "--session", alice_session[:8], "--yes")
            assert code == 0 and "removed 1 output(s)" in out.decode()
            left = await _listing(location)
            assert all(o["session"] != alice_session for o in left) and any(o["handle"] == h_bob for o in left)
            stop.set()
        assert written  # the writer kept going all along, and its outputs are all readable
        r = await bob.call_tool("read_large_output", {"handle": written[-1], "end": 2})
        assert not r.is_error
        code, out, _ = await _cli(location, "clear", "--yes")
        assert code == 0 and await _listing(location) == []


async def test_gc_removes_expired_outputs_and_says_what_it_freed(location: str) -> None:
    ttl = {"MCP_OFFLOAD_STORE_TTL_S": "1"}
    async with Client(_server(location, "--store-ttl", "1")) as client:
        await client.call_tool("offload", {"content": "x\n" * 5000})
    await anyio.sleep(1.5)
    code, out, err = await _cli(location, "gc", env=ttl)
    assert code == 0, err
    assert "expired outputs removed: 1 (9.8 KB)" in out.decode()
    code, out, _ = await _cli(location, "gc", env=ttl)
    assert "expired outputs removed: 0" in out.decode()


async def test_clear_never_follows_a_symlink_out_of_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(_server(str(store))) as client:
        handle = result_of(await client.call_tool("offload", {"content": "mine\n" * 100}))["handle"]
    (scope_dir,) = (store / "v1" / "scopes").iterdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")
    victim = "out_" + "b" * 26
    os.symlink(outside, scope_dir / victim)  # a planted output that is really a directory elsewhere
    os.symlink(outside, store / "v1" / "scopes" / ("c" * 32))  # a planted scope
    code, out, err = await _cli(str(store), "clear", "--yes")
    assert code == 0, err
    assert "removed 1 output(s)" in out.decode()
    assert (outside / "precious").read_text() == "keep me"
    code, _, err = await _cli(str(store), "rm", victim)
    assert code == 1 and (outside / "precious").exists()
    assert handle not in {o["handle"] for o in await _listing(str(store))}


async def test_list_and_rm_count_the_search_index_kept_with_an_output(tmp_path: Path) -> None:
    """The figures the operator sees are what the quotas count: content plus the sidecars kept with it."""
    from mcp_offload.store.fs import FilesystemStore
    from support.store import SCOPE_A, put_bytes

    location = str(tmp_path / "store")
    store = FilesystemStore(location, fsync=False)
    handle = await put_bytes(store, SCOPE_A, b"line\n" * 2048)  # 10 KB
    assert store.sidecar(SCOPE_A, handle, "passages").write([b"i" * 5120])  # 5 KB
    [listed] = await _listing(location)
    assert (listed["bytes"], listed["sidecar_bytes"]) == (10240, 5120)
    code, out, err = await _cli(location, "list")
    assert code == 0, err
    assert "1 output(s), 15.0 KB (of which 5.0 KB search indexes kept with them)" in out.decode()
    code, out, err = await _cli(location, "rm", handle)
    assert code == 0 and f"removed {handle} (15.0 KB)" in out.decode(), err


def test_long_names_keep_their_distinguishing_tail() -> None:
    """Proxied outputs are named `server__tool {arguments}`: cutting at 40 made every one of them read the same."""
    from mcp_offload.cli.output_view import NAME_CHARS, short_name

    names = [f'filesystem__read_text_file {{"path":"/home/you/project/src/{m}.py"}}' for m in ("models", "views")]
    shown = [short_name(n) for n in names]
    assert shown[0] != shown[1] and all(len(s) == NAME_CHARS for s in shown)
    assert shown[0].startswith("filesystem__read") and shown[0].endswith('models.py"}') and "…" in shown[0]
    assert short_name("short name") == "short name"
