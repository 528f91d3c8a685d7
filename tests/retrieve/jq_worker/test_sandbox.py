"""The jq worker's sandbox: no environment, no files, bounded memory, no life after the server, no server code."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_pool import JqRunner
from support.jq_runner import OpenStored, make_output, running


# -- the sandbox ---------------------------------------------------------------------------------------------------
async def test_no_environment_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_OFFLOAD_TEST_SECRET", "s3cr3t-value")
    jq = JqRunner()  # workers start after the secret is set
    try:
        result = await jq.run(make_output(b"{}"), "$ENV, env, ($ENV | length), $ENV.HOME, env.PATH", compact=True)
        assert result.text == "{}\n{}\n0\nnull\nnull"
        assert "s3cr3t" not in result.text
    finally:
        await jq.aclose()


async def test_no_file_names_or_module_paths(runner: JqRunner, stored: OpenStored) -> None:
    async for output in stored(b"[1]", "json"):
        result = await runner.run(output, "input_filename, get_search_list, input_line_number", compact=True)
        assert result.text == "null\n[]\n0"
    assert (await runner.run(make_output(b"[1]"), "input_filename")).text == "null"
    with pytest.raises(QueryError, match="module not found"):
        await runner.run(make_output(b"[1]"), '"passwd" | modulemeta')


async def test_memory_bomb_fails_cleanly() -> None:
    jq = JqRunner(timeout_s=20, memory_mb=128)
    try:
        started = time.monotonic()
        with pytest.raises(QueryError, match=r"ran out of memory \(limit 128 MB\)"):
            await jq.run(make_output(b"{}"), '"x" * 1e9 | length')
        assert time.monotonic() - started < 10
        assert (await jq.run(make_output(b'{"a": 2}'), ".a")).text == "2"
    finally:
        await jq.aclose()


def test_workers_die_with_their_parent() -> None:
    """A server killed mid-query (no cleanup at all) leaves no worker behind, busy or idle."""
    script = textwrap.dedent(
        """
        import os, time, anyio
        from pathlib import Path
        from mcp_offload.store.content_index import ContentIndex
        from mcp_offload.retrieve.jq_pool import JqRunner
        from mcp_offload.store.base import OutputMeta, StoredOutput

        def worker_pids():
            return [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _mine(p)]

        def _mine(p):
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
                return ppid == os.getpid() and b"jq_worker.main" in (p / "cmdline").read_bytes()
            except OSError:
                return False

        async def main():
            meta = OutputMeta("out_" + "a" * 26, "json", 2, 2, 1, 1, True, time.time())
            output = StoredOutput(meta, ContentIndex.build(b"{}"), b"{}")
            jq = JqRunner(timeout_s=60, workers=2)
            async with anyio.create_task_group() as tg:
                tg.start_soon(jq.run, output, "def f: f; f")  # one busy worker ...
                await anyio.sleep(0.3)
                await jq.run(output, ".")  # ... and one idle
                os.write(1, " ".join(map(str, worker_pids())).encode())
                os._exit(0)

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30, check=False)
    pids = [int(pid) for pid in done.stdout.split()]
    assert len(pids) == 2, done.stderr.decode()[-2000:]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(running(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(running(pid) for pid in pids)


async def test_worker_cannot_read_files_even_past_the_directive_check(tmp_path: Path) -> None:
    """Defense in depth: a request that skips `check_program` still cannot load a file (Landlock)."""
    from mcp_offload.retrieve import jq_process

    (tmp_path / "secret.json").write_text('{"token": "s3cr3t"}')
    program = f'import "secret" as $s {{search: "{tmp_path}"}}; $s'
    worker = await jq_process.JqWorker.start(jq_process.libjq_path())
    try:
        if not worker.landlock:
            pytest.skip("Landlock is not available on this kernel: file access is blocked by the other layers only")
        header = {"program": program, "compact": True, "raw": False, "max_chars": 1000, "memory_bytes": 1 << 30}
        reply = await worker.request({**header, "size": 2}, None, b"{}", 1 << 20)
        assert reply["ok"] is False and reply["error"] == "compile"
        assert "s3cr3t" not in str(reply)
    finally:
        await worker.discard()


# -- no server code in the worker ----------------------------------------------------------------------------------
def test_worker_imports_stdlib_and_its_own_package_only() -> None:
    """The worker, started as the pool starts it, imports no `mcp_offload` module (nor anything outside the stdlib)
    over its whole life: start-up, a query, exit. `-X importtime` makes it list every import on its stderr."""
    from mcp_offload.retrieve import jq_process
    from mcp_offload.retrieve.jq_worker.protocol import FRAME, decode_frame, encode_frame

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    command = jq_process.worker_command(jq_process.libjq_path(), os.getpid(), theirs.fileno())
    assert command[1:3] == ["-I", "-S"]
    proc = subprocess.Popen(
        [command[0], "-X", "importtime", *command[1:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={},
        cwd="/",
        pass_fds=(theirs.fileno(),),
    )
    theirs.close()
    try:
        ours.settimeout(30)

        def reply() -> dict[str, object]:
            (length,) = FRAME.unpack(ours.recv(FRAME.size, socket.MSG_WAITALL))
            return decode_frame(ours.recv(length, socket.MSG_WAITALL))

        assert reply()["ready"] is True
        request = {"program": ".a", "compact": True, "raw": False, "max_chars": 100, "memory_bytes": 1 << 30}
        ours.sendall(encode_frame({**request, "size": 8}) + b'{"a": 7}')
        answer = reply()
        assert (answer["ok"], answer["text"]) == (True, "7")
    finally:
        ours.close()  # EOF: the worker exits
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    imported = {
        line.split("|")[-1].strip() for line in err.decode().splitlines() if line.startswith("import time:")
    } - {"imported package"}  # the header line
    assert {"jq_worker", "jq_worker.main", "jq_worker.protocol", "jq_worker.libjq", "ctypes"} <= imported
    assert not {name for name in imported if name.startswith("mcp_offload")}
    probes = {"org", "org.python", "org.python.core"}  # `copy` tries Jython's module; the import fails
    outside = {name for name in imported - probes if name.split(".")[0] not in (*sys.stdlib_module_names, "jq_worker")}
    assert not outside, outside
