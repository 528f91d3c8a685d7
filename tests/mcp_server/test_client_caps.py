"""Answers fit the calling client's own cap, known by its clientInfo name, through the real MCP client in both
protocol eras (the handshake's `initialize`, and the 2026-07-28 per-request envelope); a set cap for any client; a cap
too small refused at start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client

from mcp_offload.core.services import Services, build_services
from mcp_offload.mcp_server.client_caps import RESULT_SIZE_HINT_CHARS, ClientCaps
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings
from support import ERAS, text_of
from support.continuations import continuation, shown_part

ERA = pytest.mark.parametrize("mode", ERAS)

CODEX = types.Implementation(name="codex-mcp-client", title="Codex", version="0.169.0")
LINES = "".join(f"line {i:05d} " + "x" * (i % 7) + "\n" for i in range(1, 2001))  # ~18 KB, as in the issue


async def read_through(client: Client, args: dict[str, Any], max_bytes: int) -> tuple[str, list[str]]:
    """Read, then follow every continuation the answers end with: the text read and every answer shown."""
    answers: list[str] = []
    pieces: list[str] = []
    while True:
        result = await client.call_tool("read_large_output", args)
        answer = text_of(result)
        assert not result.is_error, answer
        assert len(answer.encode()) <= max_bytes, f"answer {len(answers) + 1}: {len(answer.encode()):,} bytes"
        answers.append(answer)
        pieces.append(result_of(result)["text"])
        following = continuation(answer)
        if following is None:
            return "".join(pieces), answers
        args = following


@ERA
async def test_codex_reads_2000_lines_through_continuations(services: Services, mode: str) -> None:
    async with Client(build_server(services), mode=mode, client_info=CODEX) as client:
        handle = result_of(await client.call_tool("offload", {"content": LINES}))["handle"]
        text, answers = await read_through(client, {"handle": handle, "start_line": 1, "end_line": 2000}, 10_000)
    assert text == LINES and len(answers) >= 2
    assert "[cut at Codex's 10,000-byte cap: continue with read_large_output(" in answers[0]
    # the model sees every line exactly once across the answers
    shown = [line for answer in answers for line in answer.splitlines() if line.startswith("line ")]
    assert shown == LINES.splitlines()


@ERA
async def test_other_clients_keep_the_current_limits(services: Services, mode: str) -> None:
    other = types.Implementation(name="some-client", version="1")
    async with Client(build_server(services), mode=mode, client_info=other) as client:
        handle = result_of(await client.call_tool("offload", {"content": LINES}))["handle"]
        answer = text_of(await client.call_tool("read_large_output", {"handle": handle}))
    assert len(answer.encode()) > 10_000 and "[cut at the 5,000-token cap: continue with" in answer


@ERA
async def test_codex_search_shows_fewer_hits_and_how_to_see_the_rest(services: Services, mode: str) -> None:
    async with Client(build_server(services), mode=mode, client_info=CODEX) as client:
        handle = result_of(await client.call_tool("offload", {"content": LINES}))["handle"]
        search = {"pattern": "line", "handle": handle, "max_results": 500}
        result = await client.call_tool("search_large_output", search)
        answer = text_of(result)
        assert len(answer.encode()) <= 10_000
        assert result_of(result)["total_matches"] == 2000 and len(result_of(result)["matches"]) == 500
        following = continuation(answer)
        assert following is not None and "hits; the whole answer is stored as" in answer
        rest, _ = await read_through(client, following, 10_000)
    hits = [line for line in (shown_part(answer) + rest).splitlines()[1:] if line[:1].isdigit()]
    assert [int(h.split(":")[0]) for h in hits] == list(range(1, 501))


@ERA
async def test_a_set_cap_applies_to_any_client(store_dir: Path, mode: str) -> None:
    services = build_services(Settings(store=str(store_dir), client_caps="*=3000,codex-mcp-client=20KB"))
    try:
        anyone = types.Implementation(name="another-agent", version="2")
        async with Client(build_server(services, session="caps"), mode=mode, client_info=anyone) as client:
            handle = result_of(await client.call_tool("offload", {"content": LINES}))["handle"]
            text, answers = await read_through(client, {"handle": handle}, 3000)
            assert text == LINES and len(answers) > 6
            listed = text_of(await client.call_tool("list_outputs", {}))
            assert len(listed.encode()) <= 3000
        async with Client(
            build_server(services, session="caps"), mode=mode, client_info=CODEX
        ) as client:  # its own cap, set
            answer = text_of(await client.call_tool("read_large_output", {"handle": handle}))
            assert 10_000 < len(answer.encode()) <= 20_000
    finally:
        await services.aclose()


BAD_CAPS = [
    (["--client-caps", "codex-mcp-client=100"], {}, "below the smallest useful answer"),
    ([], {"MCP_OFFLOAD_CLIENT_CAPS": "*=10tokens"}, "below the smallest useful answer"),
    (["--client-caps", "nonsense"], {}, "is not NAME=SIZE"),
]


@pytest.mark.parametrize(("argv", "env", "message"), BAD_CAPS)
def test_a_cap_below_the_smallest_answer_is_refused_at_start(
    argv: list[str], env: dict[str, str], message: str, store_dir: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_offload", "--store", str(store_dir), "--no-config", *argv],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and message in done.stderr and "Traceback" not in done.stderr
    assert not store_dir.exists()  # nothing started


@ERA
async def test_a_preview_over_the_cap_keeps_its_first_lines_and_points_at_the_output(
    store_dir: Path, mode: str
) -> None:
    services = build_services(Settings(store=str(store_dir), preview_tokens=4000, client_caps="*=2000"))
    text = "".join(f"{i:04d} " + " ".join(f"word{(i * j) % 997}" for j in range(12)) + "\n" for i in range(3000))
    try:
        async with Client(
            build_server(services), mode=mode, client_info=types.Implementation(name="x", version="1")
        ) as client:
            result = await client.call_tool("offload", {"content": text})
        answer, handle = text_of(result), result_of(result)["handle"]
        assert len(result_of(result)["preview"].encode()) > 2000  # the preview alone is over the cap
        assert len(answer.encode()) <= 2000 and answer.startswith(f"Stored as {handle} (text;")
        assert answer.endswith(
            f"[preview cut at this client's 2,000-byte cap; read the output with read_large_output(handle={handle!r}, "
            "start_line=1, end_line=3000)]"
        )
    finally:
        await services.aclose()


@ERA
@pytest.mark.parametrize(("name", "cap"), [("@cline/core", 7_500), ("openclaw-bundle-mcp", 19_000)])
async def test_clients_that_show_the_raw_result_get_no_meta_and_a_cap_on_the_escaped_text(
    services: Services, mode: str, name: str, cap: int
) -> None:
    """Cline and OpenClaw show their model the whole result as JSON: the text, escaped, fits the cap, and `_meta`
    carries no copy of the result (JSON lines: every quote escaped, so the text alone would be ~20% over)."""
    doc = "".join(json.dumps({"id": i, "name": f"item-{i:04d}", "tags": ["a", "b"]}) + "\n" for i in range(3000))
    client_info = types.Implementation(name=name, version="1")
    async with Client(build_server(services), mode=mode, client_info=client_info) as client:
        stored = await client.call_tool("offload", {"content": doc})
        assert stored.meta is None or "mcp-offload/result" not in stored.meta
        handle = text_of(stored).split()[2]
        pieces, args = [], {"handle": handle, "start_line": 1, "end_line": 3000}
        while True:
            result = await client.call_tool("read_large_output", args)
            answer = text_of(result)
            assert result.meta is None or "mcp-offload/result" not in result.meta
            assert len(json.dumps(answer, ensure_ascii=False).encode()) - 2 <= cap
            pieces.append(answer)
            following = continuation(answer)
            if following is None:
                break
            args = following
    lines = [line for piece in pieces for line in piece.splitlines() if line.startswith('{"id"')]
    assert lines == doc.splitlines()


def test_qwen_code_is_known_by_the_prefix_of_its_name_and_a_set_name_wins() -> None:
    """Qwen Code's clientInfo name carries the server's name (`qwen-cli-mcp-client-offload`, read from the real
    client): matched by its prefix; a cap the setting gives that exact name wins."""
    assert ClientCaps().for_client("qwen-cli-mcp-client-offload").max_bytes == 25_000  # it persists over 28,000
    assert ClientCaps().for_client("qwen-cli-mcp-client-mine").whose == "Qwen Code's"
    assert ClientCaps("qwen-cli-mcp-client-mine=9KB").for_client("qwen-cli-mcp-client-mine").max_bytes == 9_000
    assert ClientCaps().for_client("qwen-cli") == ClientCaps().default


@pytest.mark.parametrize(
    ("version", "cap"),
    [("2.1.328", (95_000, None)), ("2.2.0", (95_000, None)), ("2.1.327", (48_000, 25_000)), ("", (48_000, 25_000)),
     ("beta", (48_000, 25_000))],
)  # fmt: skip
def test_claude_code_reads_the_tools_size_hint_from_2_1_328(version: str, cap: tuple[int, int | None]) -> None:
    """From 2.1.328 (its clientInfo version) Claude Code keeps inline a result up to the size our tools declare: the
    cap is 95,000 bytes, under RESULT_SIZE_HINT_CHARS; before it, or with no version it says, its default cut."""
    found = ClientCaps().for_client("claude-code", version)
    assert (found.max_bytes, found.max_tokens) == cap and found.whose == "Claude Code's"
    assert found.max_bytes is not None and found.max_bytes < RESULT_SIZE_HINT_CHARS


def test_a_set_claude_code_cap_wins_over_its_version() -> None:
    assert ClientCaps("claude-code=20KB").for_client("claude-code", "2.1.328").max_bytes == 20_000


@ERA
async def test_every_tool_declares_the_size_hint(services: Services, mode: str) -> None:
    """`anthropic/maxResultSizeChars` in each tool's `_meta`, through the real client in both eras."""
    async with Client(build_server(services), mode=mode) as client:
        listed = (await client.list_tools()).tools
    assert listed and all((t.meta or {}).get("anthropic/maxResultSizeChars") == RESULT_SIZE_HINT_CHARS for t in listed)


@ERA
async def test_claude_code_from_2_1_328_gets_an_answer_over_50000_characters_in_one_piece(
    services: Services, mode: str
) -> None:
    claude = types.Implementation(name="claude-code", version="2.1.328")
    doc = json.dumps([{"id": i, "name": f"item-{i:04d}"} for i in range(2000)])
    async with Client(build_server(services), mode=mode, client_info=claude) as client:
        handle = result_of(await client.call_tool("offload", {"content": doc}))["handle"]
        answer = text_of(await client.call_tool("query_large_output", {"handle": handle, "query": ".[]"}))
    assert 50_000 < len(answer.encode()) <= 95_000 and "cut at" not in answer and continuation(answer) is None


@ERA
async def test_opencode_answers_stay_within_its_2000_lines(services: Services, mode: str) -> None:
    """opencode keeps the first 2,000 lines of a result: a jq answer of 3,000 short lines (15 KB, far under its byte
    limit) comes in pieces of at most 2,000 lines, the last one's continuation included."""
    opencode = types.Implementation(name="opencode", version="1.18.33")
    async with Client(build_server(services), mode=mode, client_info=opencode) as client:
        handle = result_of(await client.call_tool("offload", {"content": json.dumps(list(range(3000)))}))["handle"]
        answer = text_of(await client.call_tool("query_large_output", {"handle": handle, "query": ".[]"}))
        assert answer.count("\n") + 1 <= 2_000 and "cut at opencode's 50,000-byte / 2,000-line cap" in answer
        following = continuation(answer)
        assert following is not None
        rest = text_of(await client.call_tool("read_large_output", following))
    numbers = [line for line in (shown_part(answer) + rest).splitlines() if line.isdigit()]
    assert numbers == [str(i) for i in range(3000)]
