"""A fifth LLM API and a provider for it, added by writing one package (`tests/toy_llm/`) and registering it
(`register_api`, `register_provider`): no file of `src/` names it, yet the gateway routes, rewrites, signs, loops and
accounts its calls, its flag is on the command line, its errors are its own, and the Compactor and the compression
service take its name and alias. `docs/architecture.md` ("How to add an LLM API", "How to add a provider") lists
the same steps this test takes."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_offload import Compactor
from mcp_offload.apis.registry import UnknownApi, api_named, register_api, unregister_api
from mcp_offload.cli.gateway import add_parser, options_from_args
from mcp_offload.core.tools import TOOLS
from mcp_offload.gateway.upstream import ProviderConfig
from mcp_offload.providers.registry import register_provider, unregister_provider
from mcp_offload.settings import Settings
from support.gateway_server import GatewayServer, StartGateway, gateway_options
from toy_llm import TOY, TOY_CLOUD
from toy_llm.framing import unframe
from toy_llm.upstream import ToyCloud

NEEDLE = "line 4242: the needle is under the third stone"


def big_result() -> str:
    lines = [f"line {i}: nothing to see in row {i} of the toy report" for i in range(6_000)]
    lines[4242] = NEEDLE
    return "\n".join(lines)


def conversation() -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "report"}'}}
    return [
        {"role": "system", "content": "You are a toy."},
        {"role": "user", "content": "Where is the needle?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": big_result()},
    ]


@pytest.fixture
def toy() -> Iterator[None]:
    register_api(TOY)
    register_provider(TOY_CLOUD)
    try:
        yield
    finally:
        unregister_provider(TOY_CLOUD)
        unregister_api(TOY)


@pytest.fixture
def toy_cloud() -> Iterator[ToyCloud]:
    cloud = ToyCloud().start()
    try:
        yield cloud
    finally:
        cloud.stop()


def test_the_gateway_serves_the_toy_api_through_its_provider(
    toy: None, toy_cloud: ToyCloud, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(toy_cloud.base_url)
    body = {"conversation": conversation(), "tools": [{"tool": "bash", "about": "run", "schema": {}}]}
    answer = httpx.post(
        f"{gateway.base_url}/toy/v1/models/toy-1:complete", json=body, headers={"x-toy-key": "k1"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    # the gateway answered the model's search itself: the client sees the final answer only
    said = answer.json()["choices"][0]["message"]["content"]
    assert said.startswith("found: ") and NEEDLE in said
    assert toy_cloud.refused == []  # every request valid, the rewritten ones signed as sent
    first, follow_up = toy_cloud.received
    stored = first["conversation"][-1]["content"]
    assert NEEDLE not in stored and "out_" in stored  # offloaded: a reference and a preview
    assert [t["tool"] for t in first["tools"]] == [
        "bash",
        "read_large_output",
        "search_large_output",
        "query_large_output",
        "list_outputs",
    ]
    assert follow_up["conversation"][:4] == first["conversation"]  # the same prefix, byte for byte
    assert NEEDLE in follow_up["conversation"][-1]["content"]  # the search's answer
    stats = httpx.get(f"{gateway.base_url}/stats", timeout=10).json()["totals"]
    assert stats["requests"] == 1 and stats["upstream_calls"] == 2 and stats["retrieval_calls"] == 1
    assert stats["cache_read_tokens"] > 0  # the toy cloud's usage, read by the toy API's dialect


@pytest.fixture
def gateway_without_upstreams(tmp_path: Path) -> Iterator[GatewayServer]:
    options = dataclasses.replace(gateway_options("http://127.0.0.1:9"), upstream=ProviderConfig(bases={}))
    gateway = GatewayServer(Settings(store=str(tmp_path / "store"), jq_workers=1), options).start()
    try:
        yield gateway
    finally:
        gateway.stop()


def test_a_toy_stream_in_the_providers_own_frames_is_spliced_through_the_loop(
    toy: None, toy_cloud: ToyCloud, start_gateway: StartGateway
) -> None:
    """The provider's framing (`ApiCall.framing`) carries the stream both ways: the gateway reads the toy frames'
    events, runs the model's search itself, and writes one stream back in toy frames."""
    gateway = start_gateway(toy_cloud.base_url)
    body = {"conversation": conversation(), "tools": [{"tool": "bash", "about": "run", "schema": {}}], "stream": True}
    answer = httpx.post(
        f"{gateway.base_url}/toy/v1/models/toy-1:complete", json=body, headers={"x-toy-key": "k2"}, timeout=60
    )
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/x-toy-frames")
    payloads, rest = unframe(answer.content)
    assert rest == b"" and payloads  # the whole answer is toy frames, nothing else
    events = [p.decode() for p in payloads]
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events if e.startswith("data: {")]
    said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert said.startswith("found: ") and NEEDLE in said
    assert not any(c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in chunks)  # the search: ours
    assert toy_cloud.refused == [] and len(toy_cloud.received) == 2


def test_a_toy_call_without_a_toy_upstream_is_refused_in_the_toy_error_document(
    toy: None, gateway_without_upstreams: GatewayServer
) -> None:
    gateway = gateway_without_upstreams
    answer = httpx.post(
        f"{gateway.base_url}/toy/v1/models/toy-1:complete", json={"conversation": []}, headers={"x-toy-key": "k"}
    )
    assert answer.status_code == 503 and answer.headers["x-toy-error"] == "upstream_not_configured"
    error = answer.json()["toy_error"]
    assert "--toy-upstream" in error["message"] and "MCP_OFFLOAD_TOY_UPSTREAM" in error["message"]
    bad = httpx.post(
        f"{gateway.base_url}/toy/v1/models/toy-1:complete", content=b"[", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and set(bad.json()) == {"toy_error"}


def test_the_gateway_command_line_has_the_toy_upstream_flag(toy: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def parse(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        add_parser(parser.add_subparsers(dest="command"))
        return parser.parse_args(["gateway", *argv])

    assert options_from_args(parse()).upstream.bases["toy"] is None
    assert options_from_args(parse("--toy-upstream", "http://127.0.0.1:9/t")).upstream.bases["toy"] == (
        "http://127.0.0.1:9/t"
    )
    monkeypatch.setenv("MCP_OFFLOAD_TOY_UPSTREAM", "http://127.0.0.1:8/t")
    assert options_from_args(parse()).upstream.bases["toy"] == "http://127.0.0.1:8/t"


@pytest.mark.parametrize("word", ["toy", "toy-chat", "TOY"])
def test_the_compactor_takes_the_toy_api_by_name_and_alias(toy: None, tmp_path: Path, word: str) -> None:
    with Compactor(store=str(tmp_path / "store"), session="toy") as compactor:
        compacted = compactor.compact(conversation(), format=word)
        assert NEEDLE not in compacted[-1]["content"] and "out_" in compacted[-1]["content"]
        assert compactor.last_report is not None and compactor.last_report.format == "toy"
        tools = compactor.tools(word)
        assert sorted(t["tool"] for t in tools) == sorted(s.name for s in TOOLS)


def test_the_compression_service_takes_the_toy_format(
    toy: None, toy_cloud: ToyCloud, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(toy_cloud.base_url)
    answer = httpx.post(
        f"{gateway.base_url}/v1/compress", json={"messages": conversation(), "format": "toy-chat"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["format"] == "toy" and len(answer.json()["ccr_hashes"]) == 1


def test_an_unknown_name_lists_the_toy_api_with_the_others(toy: None) -> None:
    with pytest.raises(UnknownApi) as refused:
        api_named("toys")
    assert "toy (toy-chat)" in str(refused.value) and "openai_chat (openai, chat, openai-chat)" in str(refused.value)
    assert api_named("toy-chat") is TOY
