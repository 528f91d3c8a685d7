"""One thing the gateway cannot read never disables the offload of a whole request: Anthropic's `system` messages
between turns (Claude Code's per-turn-control beta, sent by default), blocks of kinds the core does not know, and
markers on blocks (`cache_control`, `citations`) are kept byte-exact and skipped; the large tool result next to
them is still offloaded. Checked on a request captured from Claude Code 2.1.328 and on one case per block kind."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from llm_upstream.errors import InvalidRequest
from llm_upstream.signing import Signer
from llm_upstream.validate_anthropic import validate_messages_request
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.core.services import Services
from support.gateway_core import headers_for, open_services, wire

CAPTURED = Path(__file__).parent / "captured" / "claude_code_2.1.328.json"
POLICY = RewritePolicy(threshold_tokens=200, clear_tool_uses=None, cost_rule=False)
LARGE = "\n".join(f"line {i}: status ok, latency {i * 7 % 900} ms, note routine check {i * 31}" for i in range(400))
SIGNER = Signer(b"k" * 32)


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    async with open_services(tmp_path / "store") as services:
        yield services


def captured() -> tuple[dict[str, str], dict[str, Any]]:
    """The captured request, its thinking blocks re-sealed for this test's signer (the capture's upstream key is
    gone), and its headers with a test credential."""
    data = json.loads(CAPTURED.read_text())
    body = data["body"]
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "thinking":
                block["signature"] = SIGNER.seal("the hidden reasoning")
    return {**data["headers"], **headers_for("anthropic", "sk-ant-test")}, body


def betas(headers: dict[str, str]) -> frozenset[str]:
    return frozenset(b.strip() for b in headers.get("anthropic-beta", "").split(","))


async def test_claude_codes_request_with_system_turns_gets_its_tool_result_offloaded(services: Services) -> None:
    headers, body = captured()
    validate_messages_request(body, SIGNER, betas=betas(headers))  # valid as sent, with the beta ...
    with pytest.raises(InvalidRequest, match=r"messages\.1\.role"):  # ... and only with it (as the real API)
        validate_messages_request(body, SIGNER)
    before = copy.deepcopy(body)
    rewrite = await rewrite_request(services, api_named("anthropic"), body, headers, POLICY)
    assert rewrite.changed and rewrite.tools_injected and len(rewrite.offloaded) == 1
    assert body == before
    out = rewrite.body["messages"]
    roles = [m["role"] for m in out]
    assert roles == [m["role"] for m in body["messages"]] and "system" in roles  # order kept
    for i, message in enumerate(body["messages"][:-1]):
        assert out[i] is message  # everything but the tool result: the same objects, the same bytes
    result = out[-1]["content"][0]
    assert result["content"].startswith("Stored as out_") and result["cache_control"] == {"type": "ephemeral"}
    assert len(wire(rewrite.body)) < len(wire(body)) - 10_000
    validate_messages_request(rewrite.body, SIGNER, betas=betas(headers))
    again = await rewrite_request(services, api_named("anthropic"), copy.deepcopy(body), headers, POLICY)
    assert wire(again.body) == wire(rewrite.body)  # sticky: the same bytes on the next turn


def _turn(extra_user: list[Any], extra_assistant: list[Any], result_content: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "Look at the log."}, *extra_user]},
        {
            "role": "assistant",
            "content": [*extra_assistant, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result_content}]},
    ]


PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
USER_BLOCKS: dict[str, Any] = {
    "cache_control on text": {"type": "text", "text": "see above", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    "citations on text": {
        "type": "text",
        "text": "quoted",
        "citations": [
            {
                "type": "char_location",
                "cited_text": "q",
                "document_index": 0,
                "start_char_index": 0,
                "end_char_index": 1,
            }
        ],
    },
    "image": {"type": "image", "source": PNG},
    "document": {"type": "document", "source": PDF, "title": "spec", "citations": {"enabled": True}},
    "container_upload": {"type": "container_upload", "file_id": "file_011"},
    "search_result": {
        "type": "search_result",
        "source": "https://e.x",
        "title": "t",
        "content": [{"type": "text", "text": "hit"}],
    },
    "a kind from the future": {"type": "hologram_2031", "payload": {"x": [1, 2]}},
    "a block that is not an object": "just a string",
    "a text whose text is not a string": {"type": "text", "text": 5},
}
ASSISTANT_BLOCKS: dict[str, Any] = {
    "mcp_tool_use": {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "s", "input": {}},
    "mcp_tool_result": {
        "type": "mcp_tool_result",
        "tool_use_id": "mcptoolu_1",
        "is_error": False,
        "content": [{"type": "text", "text": LARGE}],
    },
    "a tool_use without an id": {"type": "tool_use", "name": "Bash", "input": {}},
}


@pytest.mark.parametrize("kind", [*USER_BLOCKS, *ASSISTANT_BLOCKS])
async def test_a_block_the_core_does_not_know_is_kept_and_the_rest_is_offloaded(services: Services, kind: str) -> None:
    odd = USER_BLOCKS.get(kind) or ASSISTANT_BLOCKS[kind]
    messages = _turn([odd] if kind in USER_BLOCKS else [], [odd] if kind in ASSISTANT_BLOCKS else [], LARGE)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages}
    before = wire(body)
    rewrite = await rewrite_request(services, api_named("anthropic"), body, headers_for("anthropic", kind), POLICY)
    assert wire(body) == before and rewrite.changed and len(rewrite.offloaded) == 1, kind
    out = rewrite.body["messages"]
    assert out[0] is messages[0] and out[1] is messages[1]  # the odd block's message: the same object
    assert out[2]["content"][0]["content"].startswith("Stored as out_")


async def test_a_tool_result_with_a_part_the_core_cannot_read_keeps_it_and_offloads_its_text(
    services: Services,
) -> None:
    """Parts of a result: the text part is replaced (its `cache_control` breakpoint stays where the client put it,
    its `citations` go with the old text); a search result, a document and an image part stay as they are."""
    parts = [
        {"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "hit"}]},
        {"type": "text", "text": LARGE, "cache_control": {"type": "ephemeral"}},
        {"type": "document", "source": PDF},
        {"type": "image", "source": PNG},
    ]
    messages = _turn([], [], parts)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages}
    rewrite = await rewrite_request(services, api_named("anthropic"), body, headers_for("anthropic", "parts"), POLICY)
    content = rewrite.body["messages"][2]["content"][0]["content"]
    assert content[0] is parts[0] and content[2] is parts[2] and content[3] is parts[3]
    assert content[1]["text"].startswith("Stored as out_") and content[1]["cache_control"] == {"type": "ephemeral"}
    assert list(content[1]) == ["type", "text", "cache_control"]


async def test_a_tool_result_next_to_a_block_the_core_refuses_is_still_offloaded(services: Services) -> None:
    """A user message whose other block cannot be read (not an object): its readable tool result is offloaded at
    its own position, the unreadable block stays."""
    messages = _turn([], [], LARGE)
    messages[2]["content"].append(["not", "a", "block"])
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages}
    rewrite = await rewrite_request(services, api_named("anthropic"), body, headers_for("anthropic", "mixed"), POLICY)
    content = rewrite.body["messages"][2]["content"]
    assert content[0]["content"].startswith("Stored as out_") and content[1] is messages[2]["content"][1]
