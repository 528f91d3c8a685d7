"""Conversations and upstream scripts shared by the gateway tests: a tool result large enough to be offloaded, the
same exchange in the three APIs' shapes, and scripts that make the model use the gateway's retrieval tools."""

from __future__ import annotations

import re
from typing import Any

from llm_upstream import Turn, reply, tool_call
from llm_upstream.script import Reply, Step

NEEDLE = "FATAL: disk quota exceeded on /var/cache/build-7731"
HANDLE = re.compile(r"Stored as (out_[A-Za-z0-9_-]+)")

BASH_ANTHROPIC = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
BASH_CHAT = {"type": "function", "function": {"name": "Bash", "description": "Run a shell command",
                                              "parameters": BASH_ANTHROPIC["input_schema"]}}  # fmt: skip
BASH_RESPONSES = {"type": "function", "name": "Bash", "description": "Run a shell command",
                  "parameters": BASH_ANTHROPIC["input_schema"]}  # fmt: skip


def build_log(lines: int = 1500, needle_at: int = 1100) -> str:
    out = [f"[{i:05d}] compiling module_{i % 97}.c ... ok (warnings: {i % 5})" for i in range(lines)]
    out[needle_at] = f"[{needle_at:05d}] {NEEDLE}"
    return "\n".join(out)


def anthropic_messages(log: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Build the project and tell me what failed."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "make"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": log}]},
    ]


def chat_messages(log: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a build assistant."},
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_01", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "make"}'}}]},
        {"role": "tool", "tool_call_id": "call_01", "content": log},
    ]  # fmt: skip


def responses_input(log: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"type": "function_call", "call_id": "call_01", "name": "Bash", "arguments": '{"command": "make"}'},
        {"type": "function_call_output", "call_id": "call_01", "output": log},
    ]


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
    return choice == "none" or (isinstance(choice, dict) and choice.get("type") == "none")
