"""A scripted Anthropic Messages API on loopback that records what a real agent shows its model.

Point an agent at it (`ANTHROPIC_BASE_URL`): each request that offers MCP tools is answered, as a stream of the
provider's SSE events, with the next scripted `tool_use`; once the script is done (and for requests without tools,
such as titles) with a short text. Every `tool_result` the agent sends back is recorded as the model would read it
(the text of its blocks, or the string the agent put there) next to the call it answers.

    with ScriptedAnthropic(next_call) as api:     # next_call(exchanges so far) -> (tool, input) or None
        run the agent with ANTHROPIC_BASE_URL=api.base_url
    api.exchanges                                 # [Exchange(tool, input, shown)]

`run_claude_code` runs Claude Code headless (from `.ci/agents-deps.sh`) against it with the MCP servers given.
This is the minimal recorder of issue 19 (what Claude Code shows per tool); the full scripted, validating,
cache-simulating upstream lives in tests/llm_upstream/ when present.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.isolation import require_marker

_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload"
CLIENTS = Path(os.environ.get("MCP_OFFLOAD_TEST_CLIENTS") or _CACHE / "clients/node_modules")  # the Inspector
AGENTS = Path(os.environ.get("MCP_OFFLOAD_TEST_AGENTS") or _CACHE / "agents/node_modules")  # Claude Code
INSTALL_HINT = "install them with: bash .ci/client-deps.sh and bash .ci/agents-deps.sh"


@dataclass
class Exchange:
    tool: str  # as the agent names it, e.g. mcp__offload__read_large_output
    input: dict[str, Any]
    shown: str | None = None  # what the model was shown as the result (None: no result came back yet)


NextCall = Callable[[list[Exchange]], tuple[str, dict[str, Any]] | None]


@dataclass
class ScriptedAnthropic:
    next_call: NextCall
    exchanges: list[Exchange] = field(default_factory=list)
    tool_lists: list[list[dict[str, Any]]] = field(default_factory=list)  # the `tools` of each request offering MCP
    errors: list[str] = field(default_factory=list)
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> ScriptedAnthropic:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                    recorder._answer(self, body)
                except Exception as exc:  # recorded, and the agent sees a provider error
                    recorder.errors.append(repr(exc))
                    self.send_error(500)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _answer(self, http: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if "count_tokens" in http.path:
            _send_json(http, {"input_tokens": 1})
            return
        tools = body.get("tools") or []
        block: dict[str, Any] = {"type": "text", "text": "Done."}
        with self._lock:
            self._record_results(body.get("messages") or [])
            if any(str(t.get("name", "")).startswith("mcp__") for t in tools):
                self.tool_lists.append(tools)
                if all(e.shown is not None for e in self.exchanges):
                    step = self.next_call(self.exchanges)
                    if step is not None:
                        self.exchanges.append(Exchange(step[0], step[1]))
                        block = {"type": "tool_use", "id": _id(len(self.exchanges)), "name": step[0], "input": step[1]}
        _send_stream(http, body.get("model") or "claude", block)

    def _record_results(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list):
                continue
            for part in content:
                if not isinstance(part, dict) or part.get("type") != "tool_result":
                    continue
                for number, exchange in enumerate(self.exchanges, 1):
                    if part.get("tool_use_id") == _id(number) and exchange.shown is None:
                        exchange.shown = _shown(part.get("content"))


def _id(number: int) -> str:
    return f"toolu_scripted_{number:04d}"


def _shown(content: Any) -> str:
    """A tool_result's content as the model reads it: a string as is, text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _send_json(http: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    http.send_response(200)
    http.send_header("content-type", "application/json")
    http.send_header("content-length", str(len(data)))
    http.end_headers()
    http.wfile.write(data)


def _send_stream(http: BaseHTTPRequestHandler, model: str, block: dict[str, Any]) -> None:
    """One assistant message with one content block, as the Messages API streams it."""
    http.send_response(200)
    http.send_header("content-type", "text/event-stream")
    http.send_header("connection", "close")
    http.end_headers()

    def event(kind: str, data: dict[str, Any]) -> None:
        http.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())

    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": []}
    event("message_start", {"message": {**message, "stop_reason": None, "stop_sequence": None, "usage": usage}})
    if block["type"] == "text":
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": block["text"]}})
        stop = "end_turn"
    else:
        event("content_block_start", {"index": 0, "content_block": {**block, "input": {}}})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        event("content_block_delta", {"index": 0, "delta": delta})
        stop = "tool_use"
    event("content_block_stop", {"index": 0})
    event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}})
    event("message_stop", {})
    http.wfile.flush()
    http.close_connection = True


@contextmanager
def scripted_anthropic(next_call: NextCall) -> Iterator[ScriptedAnthropic]:
    with ScriptedAnthropic(next_call) as api:
        yield api


def client_binary(name: str) -> Path:
    """`node_modules/.bin/<name>` of the installed clients (`claude`: of the agents); skips the test loudly when it
    is missing."""
    import pytest

    require_marker("real_agent", f"the real client {name}")
    where = AGENTS if name == "claude" else CLIENTS
    path = where / ".bin" / name
    if not path.exists() or shutil.which("node") is None:
        pytest.skip(f"CLIENT TEST SKIPPED: {name} is not under {where}; {INSTALL_HINT}")
    return path


def run_claude_code(workdir: Path, mcp_servers: dict[str, Any], next_call: NextCall) -> ScriptedAnthropic:
    """Claude Code headless in `workdir`/work (HOME `workdir`/home) with only `mcp_servers`, its model scripted by
    `next_call`; returns the recorder once it exited cleanly. Servers get this test's PYTHONPATH."""
    claude = client_binary("claude")
    home, cwd = workdir / "home", workdir / "work"
    home.mkdir(exist_ok=True)
    cwd.mkdir(exist_ok=True)
    servers = {}
    for name, server in mcp_servers.items():
        env = dict(server.get("env") or {})
        if os.environ.get("PYTHONPATH"):
            env.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
        servers[name] = {**server, "env": env}
    config = workdir / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    with ScriptedAnthropic(next_call) as api:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "scripted",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # --dangerously-skip-permissions is refused as root otherwise
            "ENABLE_TOOL_SEARCH": "false",  # list MCP tools instead of deferring them behind ToolSearch
        }
        command = [str(claude), "-p", "Use the MCP tools.", "--output-format", "json"]
        command += ["--dangerously-skip-permissions", "--mcp-config", str(config), "--strict-mcp-config"]
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and not api.errors, (done.stdout[-1500:], done.stderr[-1500:], api.errors)
    assert json.loads(done.stdout.strip().splitlines()[-1])["is_error"] is False
    return api
