"""The message format of a bare message list (the compression service's detection), as a table: each row a list
and the one format it is written in, or the words of the error that refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_offload.apis.detect import ShapeError, detect_api, shape_of

USER = {"role": "user", "content": "hi"}
THINKING = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}
SERVER_CALL = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
SEARCH = {"role": "assistant", "content": [SERVER_CALL, {"type": "web_search_tool_result", "tool_use_id": "s1"}]}
CHAT_IMAGE = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}
CHAT_TOOL = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
OUTPUT = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}
GEMINI = {"role": "model", "parts": [{"text": "hi"}]}

DETECTED: list[tuple[list[dict[str, Any]], str]] = [
    ([USER], "openai_chat"),  # every format reads it alike: nothing in it differs between them
    ([USER, THINKING], "anthropic"),
    ([USER, SEARCH], "anthropic"),
    ([{"role": "system", "content": "s"}, CHAT_IMAGE, CHAT_TOOL], "openai_chat"),
    ([{"role": "developer", "content": "d"}, USER, REASONING, OUTPUT], "responses"),
    ([{"role": "user", "parts": [{"text": "hi"}]}, GEMINI], "gemini"),
    (
        [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "Bash", "input": {}}}]},
        ],
        "converse",
    ),  # Bedrock Converse's one-member blocks
]
REFUSED: list[tuple[list[dict[str, Any]], str]] = [
    ([USER, GEMINI], "mix formats: messages[1] (role 'model') reads as Gemini API"),
    ([USER, {"role": "model", "parts": "hi"}], "messages[1] (role 'model') is not a message of any known format"),
    ([THINKING, CHAT_TOOL], "mix formats: messages[1] (role 'tool') reads as OpenAI Chat Completions"),
    ([CHAT_TOOL, OUTPUT], "messages[0] (role 'tool') as OpenAI Chat Completions"),
    ([{"role": "user", "content": {"text": "a dict"}}], "messages[0] (role 'user') is not a message"),
    ([{"role": "user", "content": [{"txt": "a part of no API"}]}], "not a message of any known format"),
]


@pytest.mark.parametrize(("messages", "api"), DETECTED)
def test_each_format_is_told_from_its_messages(messages: list[dict[str, Any]], api: str) -> None:
    assert shape_of(messages).name == api


@pytest.mark.parametrize(("messages", "says"), REFUSED)
def test_a_list_of_no_single_format_is_refused_with_the_messages_named(
    messages: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(ShapeError) as refused:
        shape_of(messages)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_the_compactor_detects_with_the_same_rules_and_keeps_its_fallback() -> None:
    """One detection: the `Compactor`'s `detect_api` reads a list as `shape_of` does (a Responses input whose
    developer message comes first is Responses, not Chat), and for a list `shape_of` refuses it takes the first
    message only one API reads, else Chat Completions."""
    call_output = {"type": "function_call_output", "call_id": "c1", "output": "x"}
    assert detect_api([{"role": "developer", "content": "d"}, call_output]).name == "responses"
    assert detect_api([USER, THINKING]).name == "anthropic"
    assert detect_api([THINKING, CHAT_TOOL]).name == "anthropic"  # mixed: the first one only one API reads
    assert detect_api([USER, GEMINI]).name == "gemini"  # mixed: the first one only one API reads
