"""One resolution of a caller's word for an LLM API (`apis.registry.api_named`), the same at every entry point: the
Compactor's `compact(format=…)` and `tools(…)`, the compression service's `format`, `wrap --api`. Every name and
alias is taken by all of them; anything else gets one message listing the accepted words."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcp_offload import Compactor
from mcp_offload.apis.registry import APIS, UnknownApi, accepted_names, api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.tool_defs import api_tool_definitions
from mcp_offload.cli.wrap.agents.base import WrapError
from mcp_offload.cli.wrap.command import resolve_agent
from mcp_offload.core.services import Services
from mcp_offload.gateway.compress_api import CompressApi

WORDS = [(word, api.name) for api in APIS.values() for word in (api.name, *api.aliases)]
SAMPLE: dict[str, list[dict[str, Any]]] = {  # one message each API reads (the Compactor reads it in the API named)
    "anthropic": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    "openai_chat": [{"role": "user", "content": "hi"}],
    "responses": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    "gemini": [{"role": "user", "parts": [{"text": "hi"}]}],
    "converse": [{"role": "user", "content": [{"text": "hi"}]}],
}


def test_every_api_has_a_word_and_the_words_are_the_documented_ones() -> None:
    assert {w: n for w, n in WORDS} == {
        "anthropic": "anthropic",
        "openai_chat": "openai_chat",
        "openai": "openai_chat",
        "chat": "openai_chat",
        "openai-chat": "openai_chat",
        "responses": "responses",
        "openai-responses": "responses",
        "gemini": "gemini",
        "converse": "converse",
        "bedrock-converse": "converse",
        "bedrock_converse": "converse",
    }


@pytest.mark.parametrize(("word", "name"), WORDS)
def test_compact_and_tools_take_exactly_the_same_words(tmp_path: Path, word: str, name: str) -> None:
    with Compactor(store=str(tmp_path / "store"), session="names") as compactor:
        compactor.compact(SAMPLE[name], format=word)
        assert compactor.last_report is not None and compactor.last_report.format == name
        assert compactor.tools(word) == api_tool_definitions(APIS[name])
        assert compactor.tools(word.upper()) == compactor.tools(word)


@pytest.mark.parametrize("word", ["openai_responses", "claude", "", "vertex"])
def test_an_unknown_word_gets_one_message_listing_the_accepted_ones_everywhere(tmp_path: Path, word: str) -> None:
    expected = f"unknown LLM API {word!r}: use one of {accepted_names()}"
    with Compactor(store=str(tmp_path / "store"), session="names") as compactor:
        with pytest.raises(UnknownApi) as by_tools:
            compactor.tools(word)
        with pytest.raises(UnknownApi) as by_compact:
            compactor.compact(SAMPLE["openai_chat"], format=word or "?")
    assert str(by_tools.value) == expected
    assert str(by_compact.value) == f"unknown LLM API {word or '?'!r}: use one of {accepted_names()}"
    args = argparse.Namespace(api=word or "?", agent="--", args=["true"])
    with pytest.raises(WrapError) as by_wrap:
        resolve_agent(args)
    assert str(by_wrap.value) == f"--api: unknown LLM API {word or '?'!r}: use one of {accepted_names()}"
    assert "openai_chat (openai, chat, openai-chat)" in expected and "responses (openai-responses)" in expected


async def test_the_compression_service_says_the_same_and_takes_every_word(services: Services) -> None:
    service = CompressApi(services, RewritePolicy())

    async def compress(word: str) -> tuple[int, dict[str, Any]]:
        body = {"messages": [{"role": "user", "content": "hi"}], "format": word}
        return await service.respond("POST", "/v1/compress", "", {}, orjson.dumps(body))

    status, answer = await compress("vertex")
    assert status == 400 and answer["error"] == {
        "code": "unknown_format",
        "message": f"unknown LLM API 'vertex': use one of {accepted_names()}",
    }
    for word, name in WORDS:
        if name in ("gemini", "converse"):
            continue  # a Chat-shaped message is no Gemini content, no Converse message: format_mismatch
        status, answer = await compress(word)
        assert status == 200 and answer["format"] == name, word


def test_wrap_api_takes_the_aliases_and_sets_the_apis_own_variables() -> None:
    for word in ("openai", "chat", "openai_chat", "responses"):
        agent, command = resolve_agent(argparse.Namespace(api=word, agent="--", args=["my-agent", "-v"]))
        assert command == ["my-agent", "-v"] and agent.pointed_by == "OPENAI_BASE_URL"
        launch = agent.launch("http://127.0.0.1:1", Path("/nonexistent"), {})
        assert launch.env == {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"} and launch.args == []
    assert api_named("anthropic").client_env("http://h:1") == {"ANTHROPIC_BASE_URL": "http://h:1"}
    assert api_named("gemini").client_env("http://h:1") == {"GOOGLE_GEMINI_BASE_URL": "http://h:1"}
