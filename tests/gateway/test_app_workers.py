"""`mcp-offload gateway --workers 2` as a user runs it (a real process tree) through the real anthropic SDK against
the scripted upstream: both workers serve turns (each worker's pid is on its log lines), the rewrite is sticky across
them (every request's prefix is the previous request's, byte for byte, whichever worker sent it), /stats adds up
every worker's turns, a worker killed with SIGKILL is restarted and loses nothing acknowledged, and SIGTERM drains
every worker (the stream in flight ends whole), leaves no process behind and exits 0."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import MessageParam

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from mcp_offload.cli import main
from support import HANG_TIMEOUT_S, alive, cmdline, descendants, free_port
from support.gateway_process import gateway_args, wait_healthy
from support.llm_conversations import BASH_ANTHROPIC, build_log, echo_assistant, unmarked
from support.store import RedisServer, have_redis_server

MODEL = "claude-sonnet-4-6"
MAX_TURNS = 40  # fresh connections until both workers have served (the kernel picks the worker)


@dataclass
class Workers:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                if line.startswith("{"):
                    out.append(json.loads(line))
        return out

    def served_by(self) -> list[int]:
        """The pid of the worker behind each POST /v1/messages, in order."""
        return [line["pid"] for line in self.lines() if line.get("msg", "").startswith("POST /v1/messages")]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(HANG_TIMEOUT_S)


@contextlib.contextmanager
def workers_gateway(upstream: UpstreamServer, store: str, tmp_path: Path, *extra: str) -> Iterator[Workers]:
    port = free_port()
    log = tmp_path / "gateway.log"
    args = gateway_args(port, store, upstream.base_url, upstream.openai_url, "--workers", "2", *extra)
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, lambda: log.read_text(errors="replace"))
        gateway = Workers(proc, base, log)
        deadline = time.monotonic() + HANG_TIMEOUT_S  # both workers ready: the parent says so once
        while not any("workers serving" in line.get("msg", "") for line in gateway.lines()):
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.1)
        yield gateway
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def result(turn: int) -> str:
    return build_log(lines=1200 + turn * 7, needle_at=900 + turn)  # a fresh big tool result per turn


class Conversation:
    """One agent session: the model calls Bash every turn, the client answers with a fresh big result and sends the
    whole history again, each turn on a fresh connection."""

    def __init__(self, gateway: Workers) -> None:
        self.gateway = gateway
        self.messages: list[MessageParam] = [
            {"role": "user", "content": "Build the project and tell me what failed."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_00", "name": "Bash",
                                               "input": {"command": "make"}}]},
        ]  # fmt: skip
        self.call = "toolu_00"
        self.turns = 0

    def turn(self) -> None:
        self.turns += 1
        self.messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": self.call, "content": result(self.turns)}],
            }
        )
        with anthropic.Anthropic(base_url=self.gateway.base, api_key="k", max_retries=0) as client:  # a new connection
            answer = client.messages.create(model=MODEL, max_tokens=64, messages=self.messages, tools=[BASH_ANTHROPIC])
        call = answer.content[-1]
        assert call.type == "tool_use" and call.name == "Bash"
        self.messages.append(echo_assistant(answer.content))
        self.call = call.id

    def until_both_served(self, at_least: int) -> set[int]:
        while self.turns < MAX_TURNS:
            self.turn()
            pids = set(self.gateway.served_by())
            if len(pids) >= 2 and self.turns >= at_least:
                return pids
        pytest.fail(f"{MAX_TURNS} turns on fresh connections all went to one worker: {self.gateway.served_by()}")


def make(turn: Turn) -> Any:
    return reply(tool_call("Bash", {"command": "make"}))


def assert_sticky(upstream: UpstreamServer, turns: int) -> None:
    """Each request's messages start with the previous request's, byte for byte (markers aside), and every result but
    the newest reached the upstream as the same reference it was the turn before."""
    sent = [r.body for r in upstream.received("anthropic", ok_only=True)]
    assert len(sent) == turns
    for before, after in itertools.pairwise(sent):
        head = after["messages"][: len(before["messages"])]
        assert json.dumps(unmarked(head)).encode() == json.dumps(unmarked(before["messages"])).encode()
        assert after["tools"] == before["tools"]
    last = json.dumps(sent[-1]["messages"])
    assert last.count("compiling module_") < len(result(turns))  # every result was offloaded (none went whole)


def stats(gateway: Workers) -> dict[str, Any]:
    return dict(httpx2.get(gateway.base + "/stats", timeout=30).json())


@pytest.fixture(params=["fs", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "fs":
        yield str(tmp_path / "store")
        return
    if not have_redis_server():
        pytest.skip("redis-server is not installed (.ci/redis.sh start)")
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


def test_two_workers_share_sticky_decisions_and_accounting(
    upstream: UpstreamServer, store: str, tmp_path: Path
) -> None:
    upstream.use(make)
    with workers_gateway(upstream, store, tmp_path) as gateway:
        conversation = Conversation(gateway)
        pids = conversation.until_both_served(at_least=4)
        assert pids <= set(descendants(gateway.proc.pid))  # the parent's own workers served
        assert_sticky(upstream, conversation.turns)
        figures = [stats(gateway) for _ in range(6)]  # whichever worker answers, the totals are the store's
        totals = figures[0]["totals"]
        assert all(f["totals"] == totals for f in figures)
        assert totals["requests"] == conversation.turns == totals["upstream_calls"]
        assert totals["offloaded"] == conversation.turns  # one fresh result stored per turn, by either worker
        assert totals["tokens_kept_out"] > 0 and figures[0]["sessions_total"] == 1
        children = descendants(gateway.proc.pid)
        assert gateway.stop() == 0, gateway.log.read_text()[-2000:]
    assert alive(children) == []


def test_a_killed_worker_is_restarted_and_loses_nothing(upstream: UpstreamServer, tmp_path: Path) -> None:
    upstream.use(make)
    with workers_gateway(upstream, str(tmp_path / "store"), tmp_path) as gateway:
        conversation = Conversation(gateway)
        first = conversation.until_both_served(at_least=2)
        before = stats(gateway)["totals"]
        victim = gateway.served_by()[-1]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while not any("restarting" in line.get("msg", "") for line in gateway.lines()):
            assert time.monotonic() < deadline, gateway.log.read_text()[-2000:]
            time.sleep(0.1)
        served = len(gateway.served_by())
        while len(set(gateway.served_by()[served:]) - first) == 0:  # until the new worker has served a turn
            assert conversation.turns < MAX_TURNS + 20, gateway.served_by()
            conversation.turn()
        assert_sticky(upstream, conversation.turns)  # the decisions made before the kill hold on the new worker
        after = stats(gateway)["totals"]
        assert after["requests"] == conversation.turns and after["requests"] > before["requests"]
        assert gateway.stop() == 0, gateway.log.read_text()[-2000:]
    assert victim not in alive([victim])


def test_sigterm_drains_every_worker_and_exits_0(upstream: UpstreamServer, tmp_path: Path) -> None:
    upstream.use([reply("tick " * 80, event_delay_s=0.05, chunk_chars=5)])  # a stream of about 4 s
    with workers_gateway(upstream, str(tmp_path / "store"), tmp_path) as gateway:
        children = descendants(gateway.proc.pid)
        workers = {p for p in children if "gateway" in cmdline(p)}
        assert len(workers) == 2
        streamed: list[bytes] = []
        started = threading.Event()

        def stream() -> None:
            body = {"model": MODEL, "max_tokens": 2000, "stream": True, "messages": [{"role": "user", "content": "go"}]}
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
            with (
                httpx2.Client(timeout=60) as http,
                http.stream("POST", gateway.base + "/v1/messages", json=body, headers=headers) as answer,
            ):
                for chunk in answer.iter_raw():
                    streamed.append(chunk)
                    started.set()

        streaming = threading.Thread(target=stream)
        streaming.start()
        assert started.wait(60)
        status = gateway.stop()
        streaming.join(60)
        assert status == 0, gateway.log.read_text()[-2000:]
    events = b"".join(streamed)
    assert b"message_stop" in events and events.count(b"tick") == 80  # the stream in flight ran to its end
    assert alive(children) == []
    drained = [line for line in gateway.lines() if "shutting down: waiting" in line.get("msg", "")]
    assert {line["pid"] for line in drained} == workers
    with pytest.raises(httpx2.ConnectError):  # the port is closed: nobody accepts
        httpx2.get(gateway.base + "/healthz", timeout=5)


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "two", ""])
def test_a_bad_worker_count_is_refused_in_one_line(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["gateway", "--store", str(tmp_path / "store"), "--workers", value])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--workers" in lines[0] and "worker" in lines[0].split("--workers", 1)[1], lines
    assert not (tmp_path / "store").exists()  # nothing started
