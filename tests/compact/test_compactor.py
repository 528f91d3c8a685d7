"""The compaction API against the real store: formats (validated with the SDKs' own request types), boundaries,
idempotence, the budget policy, summaries, bad input and store failures."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import MessageParam, ToolParam
from google.genai import types
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, ResponseInputParam
from pydantic import TypeAdapter

from mcp_offload import AsyncCompactor, Compactor
from support.compact import anthropic_turn, big_json, chat_turn, handle_in, read_whole, responses_turn

ANTHROPIC = TypeAdapter(list[MessageParam])
CHAT = TypeAdapter(list[ChatCompletionMessageParam])
RESPONSES = TypeAdapter(ResponseInputParam)


@pytest.fixture
async def compactor(tmp_path: Path) -> AsyncIterator[AsyncCompactor]:
    c = AsyncCompactor(store=str(tmp_path / "store"), session="test", jq_workers=1)
    try:
        yield c
    finally:
        await c.aclose()


def history(turn: Any, results: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, result in enumerate(results):
        out += turn(f"call_{i}", result, question=f"question {i}")
    return out


async def test_anthropic_results_offloaded_and_read_back(compactor: AsyncCompactor) -> None:
    big = big_json(2000)
    messages = history(anthropic_turn, [big, "small"])
    before = copy.deepcopy(messages)
    out = await compactor.compact(messages, boundary="all")
    assert messages == before  # the caller's list and dicts are untouched
    ANTHROPIC.validate_python(out)
    assert len(out) == len(messages)
    ref = out[2]["content"][0]["content"]
    assert out[2]["content"][0]["tool_use_id"] == "call_0"
    assert await read_whole(compactor, handle_in(ref)) == big
    assert '"items": array[2000]' in ref and "jq" in ref
    assert out[6]["content"][0]["content"] == "small"
    assert compactor.last_report is not None and compactor.last_report.offloaded == [handle_in(ref)]
    # the model's query through the in-process tool: same text as the MCP tool
    assert (
        await compactor.run_tool("query_large_output", {"handle": handle_in(ref), "query": ".items|length"})
    ).strip() == "2000"


async def test_openai_chat_with_sdk_objects(compactor: AsyncCompactor) -> None:
    big = big_json(2000)
    assistant = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "fetch", "arguments": "{}"}}],
        }
    )
    messages: list[Any] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
        assistant,
        {"role": "tool", "tool_call_id": "c1", "content": big},
    ]
    out = await compactor.compact(messages)
    CHAT.validate_python(out)
    assert all(isinstance(m, dict) for m in out)
    assert out[2]["tool_calls"][0]["id"] == "c1" and out[3]["tool_call_id"] == "c1"
    assert await read_whole(compactor, handle_in(out[3]["content"])) == big


async def test_responses_items(compactor: AsyncCompactor) -> None:
    big = "log line\n" * 5000
    messages = [*history(responses_turn, [big]), {"type": "reasoning", "id": "rs_1", "summary": []}]
    out = await compactor.compact(messages)
    RESPONSES.validate_python(out)
    assert out[-1] == messages[-1]
    assert await read_whole(compactor, handle_in(out[2]["output"])) == big


async def test_image_results_stored_as_blobs(compactor: AsyncCompactor) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20
    import base64

    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }
    messages = [
        {"role": "user", "content": "screenshot please"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "s1", "name": "screenshot", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "s1", "content": [{"type": "text", "text": "ok"}, image]}
            ],
        },
    ]
    out = await compactor.compact(messages)
    ANTHROPIC.validate_python(out)
    parts = out[2]["content"][0]["content"]
    assert parts[0] == {"type": "text", "text": "ok"}
    handle = handle_in(parts[1]["text"])
    assert "(binary; " in parts[1]["text"] and "image/png" in parts[1]["text"]  # the proxy's wording for blobs
    meta = await compactor.services.store.meta(compactor.scope.key, handle)
    assert meta.size == len(png) and meta.mime_type == "image/png"


@pytest.mark.parametrize(
    ("boundary", "offloaded_calls"),
    [
        ("last-turn", [2]),
        ("all", [0, 1, 2]),
        (("keep-first", 4), [1, 2]),  # turn 0 is messages 0-3
        (("keep-last", 5), [0, 1]),  # the last 5 messages hold turn 2's result
        ({"type": "keep-first", "count": 8}, [2]),
    ],
)
async def test_boundaries(compactor: AsyncCompactor, boundary: Any, offloaded_calls: list[int]) -> None:
    results = [big_json(1500, tag=str(i)) for i in range(3)]
    out = await compactor.compact(history(anthropic_turn, results), boundary=boundary)
    stored = [i for i in range(3) if str(out[4 * i + 2]["content"][0]["content"]).startswith("Stored as out_")]
    assert stored == offloaded_calls


async def test_bad_boundary(compactor: AsyncCompactor) -> None:
    with pytest.raises(ValueError, match="boundary"):
        await compactor.compact([], boundary=("keep-first", -1))


async def test_idempotent_and_incremental(compactor: AsyncCompactor, tmp_path: Path) -> None:
    messages = history(chat_turn, [big_json(1500, "a"), big_json(1500, "b")])
    first = await compactor.compact(messages, boundary="all")
    assert len(compactor.last_report.offloaded) == 2  # type: ignore[union-attr]
    again = await compactor.compact(first, boundary="all")
    assert again == first and all(a is b for a, b in zip(again, first, strict=True))
    assert compactor.last_report.offloaded == []  # type: ignore[union-attr]
    assert await compactor.compact(messages, boundary="all") == first  # the caller's own list again: nothing stored
    assert compactor.last_report.offloaded == []  # type: ignore[union-attr]
    grown = [*first, *chat_turn("call_9", big_json(1500, "c"), question="more")]
    out = await compactor.compact(grown, boundary="all")
    assert len(compactor.last_report.offloaded) == 1  # type: ignore[union-attr]
    assert out[:8] == first
    # a fresh process recognises compacted references by their content
    async with AsyncCompactor(store=str(tmp_path / "store"), session="test", jq_workers=1) as fresh:
        assert await fresh.compact(out, boundary="all") == out
        assert fresh.last_report.offloaded == []  # type: ignore[union-attr]
    assert len(await compactor.services.store.list(compactor.scope.key)) == 3


async def test_untouched_messages_come_back_as_the_objects_handed_in(compactor: AsyncCompactor) -> None:
    # frameworks rebuild equal dicts every turn; the memo knows their content from the first call, yet what is left
    # untouched must be the caller's object of this call (adapters map the result back by identity), in order
    messages = [*history(chat_turn, [big_json(1500, "a"), "small"]), {"role": "user", "content": "question 0"}]
    first = await compactor.compact(messages, boundary="all")
    assert [a is b for a, b in zip(first, messages, strict=True)] == [True, True, False, *[True] * 6]
    for rebuilt in (copy.deepcopy(first), copy.deepcopy(messages)):
        out = await compactor.compact(rebuilt, boundary="all")
        assert out == first and compactor.last_report.offloaded == []  # type: ignore[union-attr]
        untouched = [i for i in range(len(out)) if rebuilt[i] == first[i]]
        assert untouched == list(range(len(out))) if rebuilt[2] == first[2] else [0, 1, 3, 4, 5, 6, 7, 8]
        assert all(out[i] is rebuilt[i] for i in untouched)  # the same content twice (0 and 8): each its own object


async def test_retrieval_tool_results_are_not_offloaded_again(compactor: AsyncCompactor) -> None:
    page = "x" * 20_000
    messages = anthropic_turn("r1", page, question="read it", tool="read_large_output")
    out = await compactor.compact(messages, threshold_tokens=100)
    assert out == messages and compactor.last_report.offloaded == []  # type: ignore[union-attr]


async def test_budget_policy_escalates(compactor: AsyncCompactor) -> None:
    results = [big_json(400, tag=str(i)) for i in range(6)]  # ~9k tokens each
    messages = history(anthropic_turn, results)
    total = (await compactor.usage(messages)).tokens
    assert isinstance(total, int) and total > 50_000
    # under the trigger and under the threshold: untouched
    out = await compactor.compact(messages, context_window=total * 2, boundary="all", threshold_tokens=50_000)
    assert out == messages and compactor.last_report.fits  # type: ignore[union-attr]
    # over it (results under the threshold, so only the budget moves them): the oldest go first, in one batch down
    # to 3/4 of the trigger, not all of them
    window = int(total / 0.8 * 0.7)
    out = await compactor.compact(messages, context_window=window, boundary="all", threshold_tokens=50_000)
    report = compactor.last_report
    assert report is not None and report.fits and 0 < len(report.offloaded) < 6
    stored = [str(out[4 * i + 2]["content"][0]["content"]).startswith("Stored as") for i in range(6)]
    assert stored == sorted(stored, reverse=True)  # oldest first
    usage = await compactor.usage(out, context_window=window)
    assert usage.tokens == report.tokens_after and usage.tokens <= 0.75 * 0.8 * window
    ANTHROPIC.validate_python(out)


async def test_budget_transcript_step_is_lossless(compactor: AsyncCompactor) -> None:
    chat = []
    for i in range(30):
        chat += [
            {"role": "user", "content": f"question {i} " + "words " * 300},
            {"role": "assistant", "content": f"answer {i} " + "more " * 300},
        ]
    out = await compactor.compact(chat, context_window=5000)
    report = compactor.last_report
    assert report is not None and report.transcript and report.fits
    # the note joins the user message that opens the kept turn: no two user messages in a row
    note, kept = out[0]["content"]
    assert out[0]["role"] == "user" and note["text"].startswith("[Earlier conversation: messages 0–57")
    assert kept == {"type": "text", "text": chat[58]["content"]} and out[1:] == chat[59:]
    stored = await read_whole(compactor, report.transcript)
    assert [json.loads(line) for line in stored.splitlines()] == chat[:58]
    CHAT.validate_python(out)


async def test_summary_with_handle(compactor: AsyncCompactor) -> None:
    seen: list[str] = []

    def summarize(text: str) -> str:
        seen.append(text)
        return "The user asked 29 questions about words."

    chat = []
    for i in range(30):
        chat += [
            {"role": "user", "content": f"question {i} " + "words " * 300},
            {"role": "assistant", "content": "ok " * 300},
        ]
    out = await compactor.compact(chat, context_window=5000, summarize=summarize)
    handle = compactor.last_report.transcript  # type: ignore[union-attr]
    note = out[0]["content"][0]["text"]
    assert handle and "The user asked 29 questions" in note and handle in note
    assert seen and seen[0].startswith("[0] user: question 0")
    hits = await compactor.run_tool("search_large_output", {"pattern": "question 17 ", "handle": handle})
    assert "1 match" in hits


@pytest.mark.parametrize(
    ("messages", "index", "problem"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}], 1, "unknown role"),
        (
            [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "x"}],
            1,
            "no earlier",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}],
            0,
            "no earlier",
        ),
        (
            [{"role": "user", "content": "ok"}, {"type": "function_call_output", "call_id": "c", "output": {"a": 1}}],
            1,
            "output",
        ),
        ([{"role": "user", "content": "ok"}, 42], 1, "expected a dict"),
        ([{"role": "user"}], 0, 'a user message needs "content"'),  # was accepted silently
        ([{"role": "system", "content": None}], 0, 'a system message needs "content"'),
        ([{"role": "user", "content": "q"}, {"role": "assistant"}], 1, 'needs "content" or "tool_calls"'),
    ],
)
async def test_bad_input_names_the_index_and_stores_nothing(
    compactor: AsyncCompactor, messages: list[Any], index: int, problem: str
) -> None:
    with pytest.raises(ValueError, match=rf"message {index}: .*{problem}"):
        await compactor.compact(messages)
    assert await compactor.services.store.list(compactor.scope.key) == []


async def test_malformed_later_message_means_no_partial_compaction(compactor: AsyncCompactor) -> None:
    messages = [*chat_turn("c1", big_json(2000), question="q"), {"role": "tool", "tool_call_id": "zz", "content": "x"}]
    with pytest.raises(ValueError, match="message 4"):
        await compactor.compact(messages, boundary="all")
    assert await compactor.services.store.list(compactor.scope.key) == []


async def test_store_failure_keeps_the_result_inline(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    big = big_json(2000)
    async with AsyncCompactor(store=str(tmp_path / "s"), session="t", jq_workers=1, max_output_bytes=50_000) as c:
        messages = [*chat_turn("c1", big, question="q"), *chat_turn("c2", "y " * 5000)]
        out = await c.compact(messages, boundary="all")
        assert out[2]["content"] == big  # stayed inline, whole
        assert out[5]["content"].startswith("Stored as out_")  # the other result was still stored
        report = c.last_report
        assert report is not None and len(report.warnings) == 1 and "c1" in report.warnings[0]
        assert "stays inline" in caplog.text


async def test_surrogates_and_huge_strings(compactor: AsyncCompactor) -> None:
    odd = "bad \ud800 surrogate " * 3000
    out = await compactor.compact(chat_turn("c1", odd, question="q"))
    assert out[2]["content"].startswith("Stored as out_") and "surrogates" in out[2]["content"]


def test_tool_definitions_validate_with_the_sdks(tmp_path: Path) -> None:
    with Compactor(store=str(tmp_path / "store"), jq_workers=1) as c:
        assert c.session.startswith("compact-")
        TypeAdapter(list[ToolParam]).validate_python(c.tools("anthropic"))
        TypeAdapter(list[ChatCompletionToolParam]).validate_python(c.tools("openai"))
        TypeAdapter(list[FunctionToolParam]).validate_python(c.tools("responses"))
        names = [t["name"] for t in c.tools("anthropic")]
        assert names == ["offload", "read_large_output", "search_large_output", "query_large_output", "list_outputs"]
        gemini = [types.Tool.model_validate(t) for t in c.tools("gemini")]  # one Tool of five declarations
        assert [d.name for t in gemini for d in t.function_declarations or []] == names
        with pytest.raises(ValueError):
            c.tools("bedrock")
        # run_tool: errors come back as the tools' model-facing text
        assert "Invalid arguments for read_large_output" in c.run_tool("read_large_output", {"bogus": 1})
        assert "no output" in c.run_tool("read_large_output", {"handle": "out_" + "a" * 26}).lower()
        stored = c.run_tool("offload", {"content": "hello\n" * 10, "name": "greeting"})
        assert "greeting" in c.run_tool("list_outputs", {})
        assert "hello" in c.run_tool("read_large_output", {"handle": handle_in(stored), "end": 5})


def test_sync_twin_and_lazy_import(tmp_path: Path) -> None:
    with Compactor(store=str(tmp_path / "store"), session="sync", jq_workers=1) as c:
        out = c.compact(anthropic_turn("t1", big_json(2000), question="q"))
        assert out[2]["content"][0]["content"].startswith("Stored as out_")
        assert c.usage(out, retrieval_tools=False).tokens < 1000
    code = (
        "import sys, mcp_offload; assert 'mcp_offload.compact' not in sys.modules; "
        "print(mcp_offload.Compactor.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "Compactor"
