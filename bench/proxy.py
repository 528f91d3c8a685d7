"""Proxy suite: what one tool call costs through `mcp-offload --config servers.json`, next to the same call made
directly and through two well-known proxies, all in one run with the targets interleaved call by call.

Upstreams (the real npm servers from `.ci/proxy-deps.sh`): server-everything's `echo` (a ~20-byte result, the
common case that must pass through untouched) and server-filesystem's `read_text_file` of generated files over the
threshold: a 5 MB log (the `large` case), and the first answer on a 4 MB log, a 2 MB CSV and a 4 MB JSON document
(`log`, `csv`, `json`: mcp-offload stores each and answers with a reference and a preview; jmunch-mcp stores it
and answers with its own handle; the others carry it whole), and a 4 MB plain text of no kind (`text`: storing it
with a head/tail preview, the yardstick of what a log's or a table's preview adds). Every target is driven by the
real SDK `Client` of this venv (mcp 2.3), and every client and server is a separate process, as in real use:

  direct             Client → stdio → upstream (no proxy; the yardstick for overhead)
  mcp-offload        Client → stdio → `python -m mcp_offload --config servers.json` → stdio → upstreams;
                     once per client era: the 2025-11-25 handshake (`mode="legacy"`) and 2026-07-28 (pinned)
  mcp-offload http   Client → streamable HTTP (loopback) → `mcp_offload --config … --transport http` → stdio → …
                     (and once more with `--json-response`: plain JSON answers instead of an SSE stream per POST;
                     `ours-http-modern`: the default server, a 2026-07-28 client)
  mcp-proxy 0.13.0   Client → streamable HTTP (loopback) → `mcp-proxy --named-server every '<cmd>' --named-server
                     fs '<cmd>' --port P` → stdio → upstreams, at /servers/<name>/mcp. mcp-proxy only bridges
                     stdio <-> SSE/HTTP (it cannot be a stdio-in, stdio-out proxy without chaining two of them), so
                     its comparable setup is this HTTP front, and it is compared with mcp-offload's HTTP front.
  jmunch-mcp 0.2.3   Client → stdio → `jmunch-mcp --config every.toml` → stdio → upstream, one process per
                     upstream (it wraps one server): the closest twin (a stdio proxy that stores big results
                     behind handles). It relays JSON-RPC lines as they are, so the client's era is the upstream's
                     (2025-11-25). It is compared with mcp-offload's stdio front in both eras.
  fastmcp 4.1.2      Client → stdio → `fastmcp.server.create_proxy(StdioTransport(cmd, args), mode="legacy")` →
                     stdio → upstream, one FastMCP proxy process per upstream (its simplest, fastest form: a
                     multi-server MCPConfig adds a router layer). `mode="legacy"` pins the backend era: the npm
                     servers speak only the handshake and FastMCP's default (mirror the front's era) fails on them
                     with a 2026-07-28 client. It is compared with mcp-offload's stdio front.

Peers are driven with the 2025-11-25 handshake (mcp-proxy's SDK 1.x speaks nothing newer). Each peer lives in
its own venv, created on first run with pip from the registry (`MCP_OFFLOAD_BENCH_PEERS`, default
/tmp/bench-peers); a peer that cannot be installed or started is skipped loudly, as a row with a note.

Method: every target opens its connection(s) first and is warmed up; then each iteration calls every target once,
the order rotated (and reversed every other iteration) so that drift and the noise of a shared machine land on all
targets alike. Reported: median and p90 per target, the overhead (median minus direct's median) and the ratios.
Each result is checked: echo must arrive exactly as direct's (all but `_meta`, each server's own stamp), a big read
whole (peers) or as a stored reference (mcp-offload; jmunch-mcp's handle, though its reply still carries the
upstream's `structuredContent` whole). The npm upstreams speak only the handshake, so "direct"
is always a 2025-11-25 call: the 2026-07-28 row's overhead includes what that era costs the client itself.

    python bench/run.py --only proxy [--quick]
    python bench/proxy.py [--small 200] [--large 10]
        [--targets direct,ours,ours-modern,ours-http,ours-http-json,ours-http-modern,mcp-proxy,jmunch,fastmcp]
        [--cases …]
    MCP_OFFLOAD_BENCH_OURS="/path/to/candidate-mcp-offload" python bench/proxy.py   # another build in ours' place
    MCP_OFFLOAD_BENCH_BASE="env PYTHONPATH=/tmp/base/src python -m mcp_offload" python bench/proxy.py \
        --targets direct,ours,base,ours-modern,base-modern,jmunch   # before/after: a baseline build in the same run

The `base` and `base-modern` targets are mcp-offload again, run by the command in MCP_OFFLOAD_BENCH_BASE (e.g. main's
sources, `git archive main src | tar -x -C /tmp/base`), so a change is measured against what it changes in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: `bench` from the repo root
from bench.core import make_json, make_text

MCP_PROXY_VERSION = "0.13.0"
FASTMCP_VERSION = "4.1.2"
JMUNCH_VERSION = "0.2.3"
PEERS_DIR = Path(os.environ.get("MCP_OFFLOAD_BENCH_PEERS", "/tmp/bench-peers"))
NODE_MODULES = Path(
    os.environ.get("MCP_OFFLOAD_TEST_NODE_MODULES")
    or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload/proxy-servers/node_modules"
)
LARGE_BYTES = 5_000_000
# The first-answer cases: (file, size) read through server-filesystem; each read is a fresh store in every proxy.
FIRST_ANSWER = {
    "log": ("big.log", 4_000_000),
    "csv": ("table.csv", 2_000_000),
    "json": ("doc.json", 4_000_000),
    "text": ("prose.txt", 4_000_000),  # plain text, no kind: storing it plus a head/tail preview (the log's yardstick)
}
ECHO_ARGS = {"message": "hello from the proxy bench"}
WARMUP_SMALL, WARMUP_LARGE = 20, 1
CALL_TIMEOUT_S = 120.0
START_TIMEOUT_S = 90.0

# Run by the fastmcp venv's Python: `python -c FASTMCP_PROXY <command> <args…>` serves one proxied upstream on stdio.
FASTMCP_PROXY = """
import sys
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
proxy = create_proxy(StdioTransport(command=sys.argv[1], args=sys.argv[2:]), mode="legacy", name="fastmcp-proxy")
proxy.run(show_banner=False)
"""


class Skip(Exception):
    """A target cannot run here; the message says why and how to fix it (it becomes the row's note)."""


# -- peers in their own venvs ----------------------------------------------------------------------------------
def peer_venv(package: str, version: str) -> Path:
    """`PEERS_DIR/<package>-venv` with `package==version`, created (pip, from the registry) when missing or stale."""
    venv = PEERS_DIR / f"{package}-venv"
    python = venv / "bin" / "python"
    probe = [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.strip()
        if found == version:
            return venv
    print(f"[proxy] installing {package}=={version} into {venv} (first run) …", file=sys.stderr)
    try:
        PEERS_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{package}=={version}"]
        subprocess.run(pip, check=True, capture_output=True, text=True, timeout=900)
    except subprocess.CalledProcessError as exc:
        tail = (exc.stderr or "").strip().splitlines()[-1:] or [str(exc)]
        raise Skip(f"SKIPPED: could not install {package}=={version} into {venv}: {tail[0][:200]}") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise Skip(f"SKIPPED: could not install {package}=={version} into {venv}: {exc}") from None
    if subprocess.run(probe, capture_output=True, text=True, check=False).stdout.strip() != version:
        raise Skip(f"SKIPPED: {package}=={version} did not install into {venv}")
    return venv


# -- upstreams ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Upstreams:
    node: str
    everything: list[str]  # argv after node
    filesystem: list[str]
    large_file: Path
    files: dict[str, Path]

    def config(self) -> dict[str, Any]:
        return {
            "mcpServers": {
                "every": {"command": self.node, "args": self.everything},
                "fs": {"command": self.node, "args": self.filesystem},
            }
        }


def find_upstreams(workdir: Path) -> Upstreams:
    node = shutil.which("node")
    scripts = {
        p: NODE_MODULES / "@modelcontextprotocol" / f"server-{p}" / "dist" / "index.js"
        for p in ("everything", "filesystem")
    }
    missing = [str(s) for s in scripts.values() if not s.is_file()]
    if node is None or missing:
        raise Skip(
            f"SKIPPED: the upstream servers are missing ({'node' if node is None else ', '.join(missing)}); "
            "install them with: bash .ci/proxy-deps.sh"
        )
    data = workdir / "data"
    data.mkdir()
    large = data / "large.log"
    large.write_text(make_text(LARGE_BYTES, random.Random(5)))
    files = {}
    for case, (name, size) in FIRST_ANSWER.items():
        files[case] = data / name
        maker = {"log": make_text, "csv": make_csv, "json": make_json, "text": make_prose}[case]
        files[case].write_text(maker(size, random.Random(size)))
    return Upstreams(
        node=node,
        everything=[str(scripts["everything"]), "stdio"],
        filesystem=[str(scripts["filesystem"]), str(data)],
        large_file=large,
        files=files,
    )


def make_prose(size: int, rng: random.Random) -> str:
    """Lines of plain words (no timestamps, levels or delimiters): a text with no kind, previewed by head and tail."""
    words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do"]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choices(words, k=16))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def make_csv(size: int, rng: random.Random) -> str:
    """A CSV table (header, integer, text, few-valued, number, date and quoted text columns) of about `size`."""
    lines, total, i = ["id,name,state,amount,created,comment"], 0, 0
    while total < size:
        state = rng.choice(["open", "closed", "pending"])
        day = f"2026-11-{1 + i % 28:02d}"
        line = f'{i},user{i % 977},{state},{rng.random() * 1000:.2f},{day},"note {rng.randint(0, 99999)}"'
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


# -- targets ------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class Call:
    client: Client
    tool: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class Target:
    key: str
    label: str
    calls: dict[str, Call] = field(default_factory=dict)  # by case: small, large, log, csv, json
    times: dict[str, list[float]] = field(default_factory=dict)
    wire_bytes: dict[str, int] = field(default_factory=dict)
    pid: int | None = None  # the proxy process the small call goes through (a stdio child of this process)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # by case: that process's CPU time per timed call
    # by case: the client's own CPU per timed call (this thread's): a 2026-07-28 client does more per call than a
    # handshake-era one (its envelope, a larger reply), which shows in the overhead but is not the proxy's
    client_cpu_ms: dict[str, list[float]] = field(default_factory=dict)

    def set_calls(self, small: Call, read: Call, up: Upstreams) -> None:
        """echo for `small`; `read` (a read_text_file call) of the large file and of each first-answer file."""
        self.calls["small"] = small
        self.calls["large"] = read
        for case, path in up.files.items():
            self.calls[case] = Call(read.client, read.tool, {"path": str(path)})


def child_pids() -> set[int]:
    """This process's children (Linux /proc; empty elsewhere: then no CPU figures)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").glob("*"):
        with suppress(OSError, ValueError):
            pids.update(int(p) for p in (task / "children").read_text().split())
    return pids


def cpu_ms(pid: int | None) -> float | None:
    """CPU time (user + system) a process has used so far, from /proc/<pid>/stat; None when unknown."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(argv: list[str], port: int, log: Path) -> Iterator[str]:
    """Start an HTTP MCP server in its own session; yield its base URL once it listens; stop it by pid."""
    with log.open("wb") as err:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise Skip(f"SKIPPED: {Path(argv[0]).name} exited at start: {tail[0][:200]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise Skip(f"SKIPPED: {Path(argv[0]).name} did not listen within {START_TIMEOUT_S:g} s") from None
                time.sleep(0.1)
        yield base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)  # its own session: the group is the server and its stdio upstreams
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()


def ours_argv(config: Path, store: Path, *, base: bool = False) -> list[str]:
    """`python -m mcp_offload …`, or the command in MCP_OFFLOAD_BENCH_OURS (to measure a candidate build); with
    `base`, the command in MCP_OFFLOAD_BENCH_BASE (the baseline build; Skip when it is not set)."""
    if base:
        command = shlex.split(os.environ.get("MCP_OFFLOAD_BENCH_BASE", ""))
        if not command:
            raise Skip("SKIPPED: set MCP_OFFLOAD_BENCH_BASE to the baseline build's command")
    else:
        command = shlex.split(os.environ.get("MCP_OFFLOAD_BENCH_OURS", "")) or [sys.executable, "-m", "mcp_offload"]
    return [*command, "--config", str(config), "--store", str(store)]


def stdio(argv: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


async def open_target(key: str, up: Upstreams, workdir: Path, stack: AsyncExitStack) -> Target:
    """Connect every client of target `key` (inside `stack`); raises Skip when the target cannot run here."""
    spawned: list[int] = []  # the stdio children started for this target, in order (the first serves `small`)

    async def client(transport: Any, mode: str) -> Client:
        before = child_pids()
        c = await stack.enter_async_context(Client(transport, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S))
        spawned.extend(sorted(child_pids() - before))
        return c

    t = await _open_target(key, up, workdir, stack, client)
    if key != "direct" and spawned:
        t.pid = spawned[0]  # a stdio proxy: its CPU per small call is measured (the loaded machine's robust figure)
    return t


async def _open_target(key: str, up: Upstreams, workdir: Path, stack: AsyncExitStack, client: Any) -> Target:
    echo_args = ECHO_ARGS
    read_args = {"path": str(up.large_file)}
    config = workdir / "servers.json"
    config.write_text(json.dumps(up.config()))

    if key == "direct":
        t = Target(key, "direct stdio")
        small = Call(await client(stdio([up.node, *up.everything]), "legacy"), "echo", echo_args)
        t.set_calls(
            small, Call(await client(stdio([up.node, *up.filesystem]), "legacy"), "read_text_file", read_args), up
        )
        return t
    if key in ("ours", "ours-modern", "base", "base-modern"):
        # 2026-07-28 pinned, not "auto": under load a slow start can time out the discover probe, and then "auto"
        # falls back to the handshake (a base-modern row once measured 2025-11-25)
        mode = "2026-07-28" if key.endswith("-modern") else "legacy"
        baseline = key.startswith("base")
        c = await client(stdio(ours_argv(config, workdir / f"store-{key}", base=baseline)), mode)
        era = c.protocol_version
        t = Target(key, f"mcp-offload{' (base)' if baseline else ''} stdio {era}")
        t.set_calls(Call(c, "every__echo", echo_args), Call(c, "fs__read_text_file", read_args), up)
        return t
    if key in ("ours-http", "ours-http-json", "ours-http-modern"):
        port = free_port()
        argv = [*ours_argv(config, workdir / f"store-{key}"), "--transport", "http", "--port", str(port)]
        if key == "ours-http-json":
            argv.append("--json-response")  # plain JSON answers, like mcp-proxy's
        base = stack.enter_context(http_server(argv, port, workdir / f"{key}.log"))
        # the 2026-07-28 era with the default (SSE allowed): the SDK answers in JSON unless a notification comes first
        c = await client(base + "/mcp", "2026-07-28" if key == "ours-http-modern" else "legacy")
        t = Target(key, f"mcp-offload http{' json' if key == 'ours-http-json' else ''} {c.protocol_version}")
        t.set_calls(Call(c, "every__echo", echo_args), Call(c, "fs__read_text_file", read_args), up)
        return t
    if key == "mcp-proxy":
        venv = peer_venv("mcp-proxy", MCP_PROXY_VERSION)
        port = free_port()
        argv = [
            str(venv / "bin" / "mcp-proxy"), "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING",
            "--named-server", "every", shlex.join([up.node, *up.everything]),
            "--named-server", "fs", shlex.join([up.node, *up.filesystem]),
        ]  # fmt: skip
        base = stack.enter_context(http_server(argv, port, workdir / "mcp-proxy.log"))
        t = Target(key, f"mcp-proxy {MCP_PROXY_VERSION} http 2025-11-25")
        small = Call(await client(f"{base}/servers/every/mcp", "legacy"), "echo", echo_args)
        t.set_calls(small, Call(await client(f"{base}/servers/fs/mcp", "legacy"), "read_text_file", read_args), up)
        return t
    if key == "fastmcp":
        python = str(peer_venv("fastmcp", FASTMCP_VERSION) / "bin" / "python")
        env = {"FASTMCP_LOG_LEVEL": "WARNING", "FASTMCP_SHOW_SERVER_BANNER": "false"}

        def proxy(argv: list[str]) -> StdioServerParameters:
            params = stdio([python, "-c", FASTMCP_PROXY, *argv])
            return params.model_copy(update={"env": {**(params.env or {}), **env}})

        t = Target(key, f"fastmcp {FASTMCP_VERSION} stdio 2025-11-25")
        small = Call(await client(proxy([up.node, *up.everything]), "legacy"), "echo", echo_args)
        t.set_calls(
            small, Call(await client(proxy([up.node, *up.filesystem]), "legacy"), "read_text_file", read_args), up
        )
        return t
    if key == "jmunch":
        venv = peer_venv("jmunch-mcp", JMUNCH_VERSION)
        home = workdir / "jmunch-home"  # its handle and metrics databases (~/.jmunch) stay in the bench's directory
        home.mkdir(exist_ok=True)

        def wrapped(name: str, argv: list[str]) -> StdioServerParameters:
            toml = workdir / f"{name}.toml"
            toml.write_text(f"[upstream]\ncommand = {json.dumps(argv[0])}\nargs = {json.dumps(argv[1:])}\n")
            params = stdio([str(venv / "bin" / "jmunch-mcp"), "--config", str(toml), "--log-level", "WARNING"])
            return params.model_copy(update={"env": {**(params.env or {}), "HOME": str(home)}})

        t = Target(key, f"jmunch-mcp {JMUNCH_VERSION} stdio 2025-11-25")
        small = Call(await client(wrapped("every", [up.node, *up.everything]), "legacy"), "echo", echo_args)
        t.set_calls(
            small,
            Call(await client(wrapped("fs", [up.node, *up.filesystem]), "legacy"), "read_text_file", read_args),
            up,
        )
        return t
    raise ValueError(f"unknown target {key!r}")


# -- measuring ----------------------------------------------------------------------------------------------
def _text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def check(target: Target, case: str, result: Any, reference: Any | None) -> None:
    """Each target must give the same answer: echo byte-for-byte, the big read whole or as a stored reference."""
    if result.is_error:
        raise AssertionError(f"{target.label} {case}: error result {_text(result)[:300]!r}")
    if case == "small":  # `_meta` is each server's own stamp (2026-07-28 servers add their serverInfo)
        got = result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"})
        want = (
            reference.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}) if reference else got
        )
        if got != want:
            raise AssertionError(f"{target.label}: echo differs from direct: {got} != {want}")
        return
    size = LARGE_BYTES if case == "large" else FIRST_ANSWER[case][1]
    if target.key.startswith(("ours", "base")):
        links = [b for b in result.content if getattr(b, "type", "") == "resource_link"]
        if not links or "Stored as" not in _text(result):
            raise AssertionError(f"{target.label}: {case} read was not offloaded: {_text(result)[:300]!r}")
    elif target.key == "jmunch":
        if len(_text(result)) >= size // 10:
            raise AssertionError(f"{target.label}: {case} read was not stored: {len(_text(result))} chars came back")
    elif len(_text(result)) < size * 0.9:
        raise AssertionError(f"{target.label}: {case} read arrived with {len(_text(result))} chars")


async def measure(targets: list[Target], case: str, calls: int, warmup: int) -> None:
    reference = None
    for target in targets:  # warm up (and check) every target before timing any
        call = target.calls[case]
        for _ in range(warmup):
            result = await call.client.call_tool(call.tool, call.arguments)
        if case == "small" and target.key == "direct":
            reference = result
        check(target, case, result, reference)
        target.wire_bytes[case] = len(result.model_dump_json(by_alias=True, exclude_none=True))
    n = len(targets)
    cpu_before = {target.key: cpu_ms(target.pid) for target in targets}
    for i in range(calls):
        order = targets[i % n :] + targets[: i % n]
        if (i // n) % 2:
            order.reverse()
        for target in order:
            call = target.calls[case]
            start, cpu = time.perf_counter(), time.thread_time()
            result = await call.client.call_tool(call.tool, call.arguments)
            target.times.setdefault(case, []).append((time.perf_counter() - start) * 1000)
            target.client_cpu_ms.setdefault(case, []).append((time.thread_time() - cpu) * 1000)
            if result.is_error:
                raise AssertionError(f"{target.label} {case}: error result {_text(result)[:300]!r}")
    for target in targets:
        before, after = cpu_before[target.key], cpu_ms(target.pid)
        if before is not None and after is not None:
            target.cpu_ms[case] = (after - before) / calls


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


# -- rows ---------------------------------------------------------------------------------------------------
SIZES = {
    "small": "echo ~20 B",
    "large": "read 5 MB",
    "log": "1st: 4 MB log",
    "csv": "1st: 2 MB CSV",
    "json": "1st: 4 MB JSON",
    "text": "1st: 4 MB text",
}
# (ours, peer) pairs compared head to head: the same front transport on both sides
PEER_PAIRS = [
    ("ours-http", "mcp-proxy"),
    ("ours-http-json", "mcp-proxy"),
    ("ours-http-modern", "mcp-proxy"),
    ("ours", "fastmcp"),
    ("ours", "jmunch"),
    ("ours-modern", "jmunch"),
    ("base", "jmunch"),
    ("base-modern", "jmunch"),
    ("ours", "base"),  # a change against its baseline build (MCP_OFFLOAD_BENCH_BASE)
    ("ours-modern", "base-modern"),
]


def rows_for(targets: list[Target], skipped: dict[str, str], case: str) -> list[dict[str, Any]]:
    by_key = {t.key: t for t in targets if t.times.get(case)}
    size = SIZES[case]
    rows: list[dict[str, Any]] = []

    def stats(t: Target) -> tuple[float, float]:
        return statistics.median(t.times[case]), p90(t.times[case])

    direct = by_key.get("direct")
    direct_med = stats(direct)[0] if direct else None
    for t in by_key.values():
        med, high = stats(t)
        row: dict[str, Any] = {
            "suite": "proxy",
            "case": t.label,
            "size": size,
            "ours_ms": round(med, 3),
            "p90_ms": round(high, 3),
            "calls": len(t.times[case]),
            "wire_bytes": t.wire_bytes.get(case),
        }
        note = f"p90 {high:.2f} ms, n={len(t.times[case])}, reply {t.wire_bytes.get(case, 0):,} B"
        if case in t.cpu_ms:  # the proxy process's own CPU per call: what a loaded machine multiplies into latency
            row["cpu_ms_per_call"] = round(t.cpu_ms[case], 3)
            note += f", proxy CPU {t.cpu_ms[case]:.2f} ms/call"
        if t.client_cpu_ms.get(case):
            row["client_cpu_ms_per_call"] = round(statistics.median(t.client_cpu_ms[case]), 3)
            note += f", client CPU {row['client_cpu_ms_per_call']:.2f} ms/call"
        if direct_med and t.key != "direct":
            overhead = med - direct_med
            row.update(yardstick="direct", yardstick_ms=round(direct_med, 3), ratio=round(med / direct_med, 2))
            row["overhead_ms"] = round(overhead, 3)
            note = f"overhead {overhead:+.2f} ms; " + note
            if case == "small" and t.key.startswith(("ours", "base")):
                note += "; target <2 ms overhead"
        elif t.key == "direct":
            note = "the yardstick; " + note
        row["note"] = note
        rows.append(row)
    for ours_key, peer_key in PEER_PAIRS:
        ours, peer = by_key.get(ours_key), by_key.get(peer_key)
        if ours is None or peer is None:
            continue
        o_med, p_med = stats(ours)[0], stats(peer)[0]
        row = {
            "suite": "proxy",
            "case": f"{ours.label} vs {'base' if peer_key.startswith('base') else peer.label.split()[0]}",
            "size": size,
            "ours_ms": round(o_med, 3),
            "yardstick": peer.label,
            "yardstick_ms": round(p_med, 3),
            "ratio": round(o_med / p_med, 2),
        }
        if direct_med:
            o_over, p_over = o_med - direct_med, p_med - direct_med
            row.update(ours_overhead_ms=round(o_over, 3), peer_overhead_ms=round(p_over, 3))
            row["overhead_ratio"] = round(o_over / p_over, 2) if p_over > 0 else None
            row["note"] = f"overhead above direct: ours {o_over:+.2f} ms, peer {p_over:+.2f} ms"
            if row["overhead_ratio"] is not None:
                row["note"] += f" (x{row['overhead_ratio']:.2f})"
            if case == "small":
                row["note"] += "; target: ours lower"
        if case in ours.cpu_ms and case in peer.cpu_ms and peer.cpu_ms[case] > 0:
            row["cpu_ratio"] = round(ours.cpu_ms[case] / peer.cpu_ms[case], 2)
            cpu = f"ours {ours.cpu_ms[case]:.2f} ms, peer {peer.cpu_ms[case]:.2f} ms (x{row['cpu_ratio']:.2f})"
            row["note"] = row.get("note", "") + f"; proxy CPU/call {cpu}"
        rows.append(row)
    for key, why in skipped.items():
        rows.append({"suite": "proxy", "case": key, "size": size, "ours_ms": None, "note": why})
    return rows


ALL_TARGETS = [
    "direct", "ours", "ours-modern", "ours-http", "ours-http-json", "ours-http-modern", "mcp-proxy", "jmunch", "fastmcp"
]  # fmt: skip
ALL_CASES = ["small", "large", *FIRST_ANSWER]


async def _bench(keys: list[str], cases: list[str], small: int, large: int, workdir: Path) -> list[dict[str, Any]]:
    try:
        up = find_upstreams(workdir)
    except Skip as exc:
        print(f"[proxy] {exc}", file=sys.stderr)
        return [{"suite": "proxy", "case": "all", "size": "", "ours_ms": None, "note": str(exc)}]
    targets: list[Target] = []
    skipped: dict[str, str] = {}
    async with AsyncExitStack() as stack:
        for key in keys:
            try:
                inner = AsyncExitStack()
                await stack.enter_async_context(inner)
                targets.append(await open_target(key, up, workdir, inner))
            except Skip as exc:
                skipped[key] = str(exc)
                print(f"[proxy] {key}: {exc}", file=sys.stderr)
        rows: list[dict[str, Any]] = []
        failure: Exception | None = None
        plan = [(case, small if case == "small" else large) for case in cases]
        for case, calls in plan:
            warmup = WARMUP_SMALL if case == "small" else WARMUP_LARGE
            if calls <= 0:
                continue
            print(f"[proxy] {case}: {calls} calls x {len(targets)} targets …", file=sys.stderr)
            load_before = os.getloadavg()[0]
            try:
                await measure(targets, case, calls, warmup)
            except Exception as exc:  # raised after the clients closed, not wrapped in their task groups
                print(f"[proxy] {case} failed: {exc!r}", file=sys.stderr)  # the clients' closing may mask it
                failure = exc
                break
            load = [round(load_before, 2), round(os.getloadavg()[0], 2)]  # a busy machine shows here
            done = [{**row, "loadavg_before_after": load} for row in rows_for(targets, skipped, case)]
            print(f"[proxy] {case} rows: {json.dumps(done)}", file=sys.stderr)  # kept if a later case fails
            rows += done
    if failure is not None:
        raise failure
    return rows


def run(args: Any) -> list[dict[str, Any]]:
    quick = bool(getattr(args, "quick", False))
    small = getattr(args, "small", None)
    large = getattr(args, "large", None)
    small = (40 if quick else 200) if small is None else small
    large = (3 if quick else 10) if large is None else large
    keys = [k for k in (getattr(args, "targets", None) or ",".join(ALL_TARGETS)).split(",") if k]
    cases = [c for c in (getattr(args, "cases", None) or ",".join(ALL_CASES)).split(",") if c]
    with tempfile.TemporaryDirectory(prefix="mcp-offload-bench-proxy-") as tmp:
        return anyio.run(_bench, keys, cases, small, large, Path(tmp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, help="timed echo calls per target (default 200; --quick 40)")
    parser.add_argument("--large", type=int, help="timed big reads per target and case (default 10; --quick 3)")
    parser.add_argument("--targets", default=",".join(ALL_TARGETS), help="comma list of targets")
    parser.add_argument("--cases", default=",".join(ALL_CASES), help="comma list of cases")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    from bench.run import print_table

    rows = run(args)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
