"""Conversations and upstream scripts shared by the gateway tests: a tool result large enough to be offloaded, the
same exchange in the three APIs' shapes, and scripts that make the model use the gateway's retrieval tools."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

from anthropic.types import MessageParam, ToolParam
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam
from openai.types.responses import FunctionToolParam, ResponseInputParam
from pydantic import BaseModel

from llm_upstream import Turn, reply, tool_call
from llm_upstream.script import Reply, Step

NEEDLE = "FATAL: disk quota exceeded on /var/cache/build-7731"
HANDLE = re.compile(r"Stored as (out_[A-Za-z0-9_-]+)")

_BASH_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}
BASH_ANTHROPIC: ToolParam = {"name": "Bash", "description": "Run a shell command", "input_schema": _BASH_SCHEMA}
BASH_CHAT: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {"name": "Bash", "description": "Run a shell command", "parameters": _BASH_SCHEMA},
}
# the SDK's TypedDict requires `strict`; this tool leaves it out, as clients may (the wire body stays as sent)
BASH_RESPONSES = cast(FunctionToolParam, {"type": "function", "name": "Bash", "description": "Run a shell command",
                                          "parameters": _BASH_SCHEMA})  # fmt: skip


def build_log(lines: int = 1500, needle_at: int = 1100) -> str:
    out = [f"[{i:05d}] compiling module_{i % 97}.c ... ok (warnings: {i % 5})" for i in range(lines)]
    out[needle_at] = f"[{needle_at:05d}] {NEEDLE}"
    return "\n".join(out)


def anthropic_messages(log: str) -> list[MessageParam]:
    return [
        {"role": "user", "content": "Build the project and tell me what failed."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "make"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": log}]},
    ]


def chat_messages(log: str) -> list[ChatCompletionMessageParam]:
    return [
        {"role": "system", "content": "You are a build assistant."},
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_01", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "make"}'}}]},
        {"role": "tool", "tool_call_id": "call_01", "content": log},
    ]  # fmt: skip


def responses_input(log: str) -> ResponseInputParam:
    return [
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"type": "function_call", "call_id": "call_01", "name": "Bash", "arguments": '{"command": "make"}'},
        {"type": "function_call_output", "call_id": "call_01", "output": log},
    ]


def gemini_contents(log: str, *, call_id: str | None = None) -> list[dict[str, Any]]:
    """The Gemini conversation: the user's task, the model's Bash call, its result (`{"output": log}`, as Gemini CLI
    sends it; with `call_id` the call and the result carry that id, as Gemini CLI adds one)."""
    ids = {"id": call_id} if call_id else {}
    return [
        {"role": "user", "parts": [{"text": "Build the project and tell me what failed."}]},
        {"role": "model", "parts": [{"functionCall": {**ids, "name": "Bash", "args": {"command": "make"}}}]},
        {"role": "user", "parts": [{"functionResponse": {**ids, "name": "Bash", "response": {"output": log}}}]},
    ]


BASH_GEMINI: dict[str, Any] = {
    "functionDeclarations": [
        {"name": "Bash", "description": "Run a shell command", "parametersJsonSchema": _BASH_SCHEMA}
    ]
}


def echo_assistant(content: Iterable[BaseModel], **dump: Any) -> MessageParam:
    """The assistant message a client sends back on its next turn: the response's blocks dumped to JSON (the SDK's
    response models and its request TypedDicts describe the same shapes, which the type checker cannot see)."""
    return cast(MessageParam, {"role": "assistant", "content": [block.model_dump(**dump) for block in content]})


def unmarked(value: Any) -> Any:
    """`value` without its `cache_control` markers: what a prompt cache keys on. The gateway marks the requests of an
    Anthropic client that marks nothing, and its markers move from turn to turn as a client's own do."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def handles_in(turn: Turn) -> list[str]:
    return [m for exchange in turn.exchanges() for m in HANDLE.findall(exchange.result or "")]


def search_then_answer(*, extra: Any = None, rounds: int = 1) -> Any:
    """A script: while fewer than `rounds` retrieval results are in the history, search the offloaded log for the
    needle (plus `extra`, another tool call in the same response: a mixed turn); then answer with the line found."""

    def step(turn: Turn) -> Step:
        searches = [e for e in turn.exchanges() if e.name == "search_large_output"]
        handles = handles_in(turn)
        if len(searches) < rounds and handles:
            call = tool_call("search_large_output", {"handle": handles[0], "pattern": "FATAL", "literal": True})
            blocks: list[Any] = [f"Searching ({len(searches) + 1})... ", call]
            if extra is not None:
                blocks.append(extra)
            return reply(*blocks)
        found = next((e.result for e in reversed(searches) if e.result and NEEDLE in e.result), None)
        return reply(f"Found it: {NEEDLE}" if found else "no retrieval result seen")

    return step


def always_search() -> Any:
    """A model that never stops calling the retrieval tool (the loop limit must end it)."""

    def step(turn: Turn) -> Reply:
        handles = handles_in(turn) or ["out_missing"]
        if not turn.body.get("tools") or _tool_choice_none(turn.body):
            return reply("giving up on searching")
        return reply(tool_call("search_large_output", {"handle": handles[0], "pattern": "FATAL", "literal": True}))

    return step


def _tool_choice_none(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    gemini = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")
    return choice == "none" or (isinstance(choice, dict) and choice.get("type") == "none") or gemini == "NONE"
