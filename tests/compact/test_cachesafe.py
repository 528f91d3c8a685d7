"""The Compactor on the gateway's cache-safe core (issue 18): its decisions live in the session's DecisionRecord, so
they are sticky across a restart and across two instances on one Redis; the already-sent prefix is rewritten only
by the cost rule or window pressure (the reasons the record holds say which); golden bytes pin the result."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_offload import AsyncCompactor, Compactor
from mcp_offload.cachesafe.record import Decision, open_record, part_digest
from support.compact import anthropic_turn, big_json, chat_turn, responses_turn, validate
from support.store import RedisServer

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("MCP_OFFLOAD_REGEN_GOLDEN") == "1"
TURNS = {"anthropic": anthropic_turn, "openai": chat_turn, "responses": responses_turn}


def loop(fmt: str, requests: int) -> Iterator[list[dict[str, Any]]]:
    """An agent loop's raw history at each request: one tool result more each (sizes cycling small to large, the
    same every run), a new user turn every 4 requests."""
    sizes = (40, 900, 60, 2600, 300, 1200)
    history: list[dict[str, Any]] = []
    for n in range(requests):
        call, result, answer = TURNS[fmt](f"call_{n}", big_json(sizes[n % len(sizes)], tag=str(n)))
        if n % 4 == 0:
            history += (
                [answer, {"role": "user", "content": f"ask {n}"}] if history else [{"role": "user", "content": "go"}]
            )
        history += [call, result]
        yield list(history)


def _result_digests(fmt: str, history: list[dict[str, Any]]) -> dict[str, int]:
    """part digest -> message index, for every tool result text of a raw history in `fmt`."""
    found: dict[str, int] = {}
    for i, m in enumerate(history):
        if fmt == "anthropic" and isinstance(m.get("content"), list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    found[part_digest(block["tool_use_id"], 0, block["content"])] = i
        elif fmt == "openai" and m.get("role") == "tool":
            found[part_digest(m["tool_call_id"], 0, m["content"])] = i
        elif fmt == "responses" and m.get("type") == "function_call_output":
            found[part_digest(m["call_id"], 0, m["output"])] = i
    return found


def _decisions(c: Compactor, digests: list[str]) -> dict[str, Decision]:
    async def run() -> dict[str, Decision]:
        session = c._async._core_session
        return (await open_record(c.services).state(session, digests)).decisions

    found: dict[str, Decision] = c._call(run)
    return found


def _first_change(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int | None:
    for i, (a, b) in enumerate(zip(before, after, strict=False)):
        if a != b:
            return i
    return None


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
def test_restart_gives_the_golden_bytes(tmp_path: Path, fmt: str) -> None:
    """A new Compactor on the same store and session (a restart) compacts the same raw history to the very same
    bytes, from the record alone (it stores nothing), with a window's pressure and transcript decisions too; the
    bytes are pinned in golden/."""
    store = str(tmp_path / "store")
    history: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = []
    options: dict[str, Any] = {"boundary": ("keep-last", 4), "context_window": 12_000, "format": fmt}
    with Compactor(store=store, session="golden", jq_workers=1) as first:
        for history in loop(fmt, 14):
            sent.append(first.compact(history, **options))
        report = first.last_report
        assert report is not None and report.fits
    with Compactor(store=store, session="golden", jq_workers=1) as second:
        again = second.compact(history, **options)
        tools = second.tools(fmt)
        assert second.last_report is not None and second.last_report.offloaded == []  # all from the record
        assert second.compact(history, **options) == again
    assert json.dumps(again) == json.dumps(sent[-1])
    validate(fmt, again, tools)
    golden = GOLDEN / f"restart_{fmt}.json"
    text = json.dumps(again, indent=1, ensure_ascii=False) + "\n"
    if REGENERATE:
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"{golden.name} changed (MCP_OFFLOAD_REGEN_GOLDEN=1 if meant)"


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
@pytest.mark.parametrize(("boundary", "window"), [("last-turn", None), (("keep-last", 4), None), ("all", 9_000)])
def test_prefix_rewritten_only_by_cost_rule_or_pressure(
    tmp_path: Path, fmt: str, boundary: Any, window: int | None
) -> None:
    """Each request's output starts with the previous request's output, byte for byte, unless the record gained a
    decision for a result in that prefix taken by the cost rule or under window pressure (never by the threshold
    rule, which decides new results only); and every such rewrite is one batch, at or after its first result."""
    threshold_only = boundary == "last-turn"
    with Compactor(store=str(tmp_path / "store"), session="prefix", jq_workers=1) as c:
        previous: list[dict[str, Any]] = []
        known: dict[str, Decision] = {}
        rewrites = 0
        for history in loop(fmt, 16):
            out = c.compact(history, boundary=boundary, context_window=window, format=fmt, retrieval_tools=False)
            digests = _result_digests(fmt, history)
            decisions = _decisions(c, list(digests))
            new = {d: decisions[d] for d in decisions.keys() - known.keys()}
            changed = _first_change(previous, out[: len(previous)])
            report = c.last_report
            assert report is not None
            if changed is not None and report.transcript is None:
                rewrites += 1
                in_prefix = {d: v for d, v in new.items() if digests[d] < len(previous)}
                assert in_prefix, f"the prefix changed at message {changed} with no new decision for it"
                assert {v.reason for v in in_prefix.values()} <= {"cost", "pressure"}
                assert min(digests[d] for d in in_prefix) == changed  # the batch starts where the bytes change
            for d, v in new.items():
                if digests[d] >= len(previous):
                    assert v.reason == "threshold" or window is not None
            assert all(known[d] == decisions[d] for d in known)  # a decision never changes
            known.update(decisions)
            previous = out
        if threshold_only:
            assert rewrites == 0 and {v.reason for v in known.values()} <= {"threshold"}
        else:
            assert rewrites >= 1  # the loop does make the rule act: the assertions above were exercised
        assert any(v.offloaded for v in known.values())


async def test_two_instances_on_one_redis_agree(shared_redis: str, tmp_path: Path) -> None:
    """Two Compactors on one Redis (two processes of one agent): racing on the same history they store each result
    once and send the same bytes; one continues where the other stopped with the other's prefix, byte for byte."""
    session = f"twins-{os.getpid()}-{tmp_path.name}"[:60]
    histories = list(loop("anthropic", 9))
    options: dict[str, Any] = {"boundary": ("keep-last", 4), "context_window": 10_000}
    async with (
        AsyncCompactor(store=shared_redis, session=session) as a,
        AsyncCompactor(store=shared_redis, session=session) as b,
    ):
        outs: dict[str, list[dict[str, Any]]] = {}
        reported: set[str] = set()

        async def run(name: str, c: AsyncCompactor, history: list[dict[str, Any]]) -> None:
            outs[name] = await c.compact(history, **options)
            report = c.last_report
            assert report is not None
            reported.update([*report.offloaded, *([report.transcript] if report.transcript else [])])

        for history in histories[:6]:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "a", a, history)
                tg.start_soon(run, "b", b, history)
            assert json.dumps(outs["a"]) == json.dumps(outs["b"])
        # both stored each result under the same derived handle (idempotent): one copy, no stray handles
        assert reported and len(await a.services.store.list(a.scope.key)) == len(reported)
        for i, history in enumerate(histories[6:], start=6):  # alternate: a, b, a
            c = a if i % 2 == 0 else b
            out = await c.compact(history, **options)
            again = await (b if c is a else a).compact(history, **options)
            assert json.dumps(out) == json.dumps(again)


async def test_in_place_edit_after_compaction_is_seen(tmp_path: Path) -> None:
    """The record is keyed by content: a result the caller rewrites in place (same call id, new text) is a new part,
    decided on its own; the earlier decision of the old text stays as it was."""
    async with AsyncCompactor(store=str(tmp_path / "store"), session="edit", jq_workers=1) as c:
        chat = chat_turn("c1", big_json(800, tag="old"), question="go")
        first = await c.compact(chat)
        assert first[2]["content"].startswith("Stored as out_")
        chat[2]["content"] = big_json(900, tag="new")  # edited in place: the same dict object
        second = await c.compact(chat)
        assert second[2]["content"].startswith("Stored as out_") and second[2]["content"] != first[2]["content"]
        report = c.last_report
        assert report is not None and len(report.offloaded) == 1
        chat[2]["content"] = big_json(800, tag="old")  # back to the first text: the first decision's bytes again
        assert await c.compact(chat) == first


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
async def test_a_decision_holds_for_any_boundary_and_threshold(tmp_path: Path, fmt: str) -> None:
    """Once offloaded (or kept inline for good), a result is sent with the same bytes by every later call, whatever
    boundary or threshold that call asks for: the boundary decides only what is new."""
    chat = [
        *TURNS[fmt]("c1", big_json(900, tag="a"), question="go"),
        *TURNS[fmt]("c2", big_json(30, tag="b"), question="more"),
    ]
    async with AsyncCompactor(store=str(tmp_path / "store"), session="any-boundary", jq_workers=1) as c:
        first = await c.compact(chat, boundary="all", format=fmt)
        assert "Stored as out_" in json.dumps(first[2]) and first[6] is chat[6]  # the big one out, the small one in
        for boundary in ("last-turn", ("keep-first", 100), ("keep-last", 20)):
            for threshold in (50_000, 2000):
                again = await c.compact(chat, boundary=boundary, threshold_tokens=threshold, format=fmt)
                assert json.dumps(again) == json.dumps(first), (boundary, threshold)
                assert c.last_report is not None and c.last_report.offloaded == []


async def test_record_down_sends_the_list_as_given_then_recovers(private_redis: RedisServer) -> None:
    """Redis (store and record) down: `compact` returns the caller's list as it came, with a warning and no
    traceback (nothing lost; the cache misses once). Back up (empty: this server keeps nothing on disk), the result is
    decided again to the very same bytes: its handle derives from the session and the content."""
    chat = chat_turn("c1", big_json(900), question="go")
    async with AsyncCompactor(store=private_redis.url, session="down") as c:
        before = await c.compact(chat)
        assert before[2]["content"].startswith("Stored as out_")
        private_redis.stop()
        try:
            out = await c.compact(chat)
            assert out == chat and all(a is b for a, b in zip(out, chat, strict=True))
            report = c.last_report
            assert report is not None and report.warnings and "decision record" in report.warnings[0]
            assert "Traceback" not in report.warnings[0]
        finally:
            private_redis.start()
        for _ in range(50):  # the client reconnects
            out = await c.compact(chat)
            if out != chat:
                break
            await anyio.sleep(0.1)
        assert json.dumps(out) == json.dumps(before)
