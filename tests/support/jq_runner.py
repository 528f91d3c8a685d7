"""Shared pieces of the jq suites: sample documents, outputs in memory or in a real store, pools, the CLI yardstick
and a way to find this process's workers from outside (/proc).

Its fixtures are registered as a plugin by tests/conftest.py; the jq tests import its helpers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_offload.retrieve.jq_pool import JqResult, JqRunner
from mcp_offload.store.base import Kind, OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import new_handle, scope_key
from support.child_processes import child_pids

WORKER_MARK = b"jq_worker.main"  # in every worker's command line (see `jq_process.worker_command`)
JQ = shutil.which("jq")
needs_jq_cli = pytest.mark.skipif(JQ is None, reason="the jq CLI is not installed (apt-get install jq): no yardstick")


DOC = (
    '{"name": "Zoë ☃ 😀 \\u00e9", "tags": ["b", "a", "é", "tab\\tq\\"uote", "\\u0000x", ""],'
    ' "nums": [3, 1.5, -2, 0.25, 12345678901, 0], "nested": {"z": 1, "a": {"deep": [{}, [], null, true, false]}},'
    ' "items": [{"id": 1, "price": 9.5, "ok": true}, {"id": 2, "price": 20, "ok": false}, {"id": 3, "price": 0.5}]}'
).encode()


JSONL = b'{"a": 1, "s": "x"}\n{"a": 2, "s": "\xc3\xa9"}\n{"a": 3, "s": "z"}\n'


def make_output(data: bytes, kind: Kind = "json") -> StoredOutput:
    meta = OutputMeta(
        handle=new_handle(),
        kind=kind,
        size=len(data),
        chars=len(data.decode("utf-8", "surrogatepass")),
        lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
        tokens=1,
        tokens_estimated=True,
        created=time.time(),
    )
    return StoredOutput(meta, ContentIndex.build(data), data, path=None)


def jq_cli(program: str, path: Path, *flags: str) -> str:
    assert JQ is not None
    done = subprocess.run([JQ, *flags, program, str(path)], capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def as_cli(result: JqResult) -> str:
    """Our text as the CLI prints it: each result followed by a newline."""
    return result.text + "\n" if result.results else ""


def worker_pids() -> set[int]:
    """This process's jq workers, found the way an outsider would: /proc."""
    return child_pids(os.getpid(), WORKER_MARK)


async def wait_until(condition: Callable[[], bool], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        await anyio.sleep(0.02)
    return condition()


@pytest.fixture
async def runner() -> AsyncIterator[JqRunner]:
    jq = JqRunner(timeout_s=10)
    yield jq
    await jq.aclose()


@pytest.fixture
async def fast_runner() -> AsyncIterator[JqRunner]:
    jq = JqRunner(timeout_s=1.5, max_output_chars=5_000)
    yield jq
    await jq.aclose()


OpenStored = Callable[[bytes, Kind], AsyncIterator[StoredOutput]]


@pytest.fixture
async def stored(tmp_path: Path) -> AsyncIterator[OpenStored]:
    """Open outputs from a real FilesystemStore: the worker then maps the stored file itself."""
    store = FilesystemStore(tmp_path / "store", fsync=False)
    scope = scope_key("test-session")

    def open_stored(data: bytes, kind: Kind = "json") -> AsyncIterator[StoredOutput]:
        async def gen() -> AsyncIterator[StoredOutput]:
            output = make_output(data, kind)
            await store.put(scope, output.meta, output.index, data)
            async with store.open(scope, output.meta.handle) as opened:
                assert opened.path is not None
                yield opened

        return gen()

    yield open_stored
    await store.aclose()


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def json_doc(approx_bytes: int, seed: int = 0) -> bytes:
    """A JSON object whose `items` array makes it about `approx_bytes` long (~100 bytes per item)."""
    count = max(1, approx_bytes // 100)
    items = ",".join(
        f'{{"id": {i}, "name": "item-{i}-{seed}", "price": {i % 1000}.25, "ok": {str((i + seed) % 3 > 0).lower()}, '
        f'"tags": ["a", "b{i % 7}"]}}'
        for i in range(count)
    )
    return f'{{"seed": {seed}, "items": [{items}]}}'.encode()


def same_handle(output: StoredOutput, data: bytes, *, created: float | None = None) -> StoredOutput:
    """Another output under the same handle (which a store never produces): the cache must still tell them apart."""
    meta = replace(output.meta, size=len(data), created=output.meta.created if created is None else created)
    return StoredOutput(meta, ContentIndex.build(data), data, path=None)
