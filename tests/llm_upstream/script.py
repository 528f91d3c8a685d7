"""What the scripted upstream answers: replies, failures, and the scripts that choose them.

A script is a list of steps (used in order, one per generating request) or a callable `Turn -> step`. A step is
a `Reply` (content blocks plus timing and fault knobs), an `ApiError` (any status, in the API's error format), a
plain string (a text reply) or a callable `Turn -> step`. When a list runs out the server falls back to its
default script, `AgentScript`.

`Turn` is the request seen from the script: the API, the body, and the history normalized across the three APIs
(user texts, tool calls made, tool results received), so one script serves Anthropic, Chat and Responses alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from llm_upstream.errors import ApiError, ApiKind


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None  # minted by the server when None
    namespace: str | None = None  # Responses: the `namespace` tool holding it (Codex groups MCP tools so)


@dataclass(frozen=True, slots=True)
class Thinking:
    """Anthropic: a signed `thinking` block (`redacted_thinking` when redacted); Responses: a reasoning item with
    sealed `encrypted_content`; Chat: not emitted (the API has no such block)."""

    text: str
    redacted: bool = False


Block: TypeAlias = Text | ToolCall | Thinking


@dataclass(frozen=True, slots=True)
class Reply:
    content: tuple[Block, ...]
    stop_reason: str | None = None  # default: tool use when there are tool calls, else end of turn
    first_token_delay_s: float = 0.0  # streams: before the first event; non-streaming: before the answer
    event_delay_s: float = 0.0  # streams: between events
    drop_after_events: int | None = None  # streams: cut the connection after this many events
    error_after_events: int | None = None  # Bedrock streams: end with the service's exception frame after this many
    chunk_chars: int = 24  # size of text / argument deltas
    output_tokens: int | None = None  # default: counted


def reply(*blocks: Block | str, **knobs: Any) -> Reply:
    return Reply(tuple(Text(b) if isinstance(b, str) else b for b in blocks), **knobs)


def tool_call(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    return ToolCall(name, arguments or {}, id)


Step: TypeAlias = "Reply | ApiError | str | Callable[[Turn], Step]"
Script: TypeAlias = "list[Step] | Callable[[Turn], Step]"


@dataclass(frozen=True, slots=True)
class ToolExchange:
    call_id: str
    name: str
    arguments: Any
    result: str | None  # None while unanswered


@dataclass(slots=True)
class Turn:
    api: ApiKind
    body: dict[str, Any]
    session: str
    index: int  # 0-based number of this generating request in the whole server
    prior_items: list[dict[str, Any]] = field(default_factory=list)  # Responses: items of previous_response_id
    model_name: str = ""  # Gemini: the model named in the path
    _events: list[tuple[str, Any]] | None = None

    @property
    def model(self) -> str:
        return self.model_name or str(self.body.get("model", ""))

    def _declarations(self) -> list[dict[str, Any]]:
        """Gemini: every function declaration of every Tool object."""
        found: list[dict[str, Any]] = []
        for tool in self.body.get("tools") or []:
            found.extend(d for d in tool.get("functionDeclarations") or [] if isinstance(d, dict))
        return found

    def _tool_specs(self) -> list[dict[str, Any]]:
        """Converse: every `toolSpec` of `toolConfig.tools`, with its schema where the other APIs have it."""
        specs = [t["toolSpec"] for t in (self.body.get("toolConfig") or {}).get("tools") or [] if "toolSpec" in t]
        return [{**s, "input_schema": (s.get("inputSchema") or {}).get("json") or {}} for s in specs]

    @property
    def tool_names(self) -> list[str]:
        if self.api == "gemini":
            return [str(d.get("name", "")) for d in self._declarations()]
        if self.api == "converse":
            return [str(s.get("name", "")) for s in self._tool_specs()]
        names = []
        for tool in self.body.get("tools") or []:
            if self.api == "openai_chat":
                names.append((tool.get("function") or tool.get("custom") or {}).get("name", ""))
            else:
                names.append(tool.get("name", tool.get("type", "")))
        return names

    def tool(self, name: str) -> dict[str, Any] | None:
        if self.api == "gemini":
            return next((dict(d) for d in self._declarations() if d.get("name") == name), None)
        if self.api == "converse":
            return next((s for s in self._tool_specs() if s.get("name") == name), None)
        for tool in self.body.get("tools") or []:
            spec = (tool.get("function") or tool.get("custom") or tool) if self.api == "openai_chat" else tool
            if spec.get("name") == name:
                return dict(spec)
        return None

    @property
    def thinking_enabled(self) -> bool:
        thinking = self.body.get("thinking")
        return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")

    def user_texts(self) -> list[str]:
        """Text the user (not a tool) wrote, oldest first."""
        return [payload for kind, payload in self.events() if kind == "user"]

    @property
    def last_user_text(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""

    def exchanges(self) -> list[ToolExchange]:
        """Every tool call in the history with its result, oldest first."""
        calls: dict[str, ToolExchange] = {}
        for kind, payload in self.events():
            if kind == "call":
                calls[payload[0]] = ToolExchange(payload[0], payload[1], payload[2], None)
            elif kind == "result" and payload[0] in calls:
                c = calls[payload[0]]
                calls[payload[0]] = ToolExchange(c.call_id, c.name, c.arguments, payload[1])
        return list(calls.values())

    @property
    def tool_turns(self) -> int:
        """Assistant turns that called tools, in the history."""
        return self.tool_turns_after(-1)

    def tool_turns_after(self, position: int) -> int:
        """Assistant turns that called tools after event `position` (an index into `events()`)."""
        turns, in_turn_with_call = 0, False
        for kind, _ in self.events()[position + 1 :]:
            if kind == "turn":
                in_turn_with_call = False
            elif kind == "call" and not in_turn_with_call:
                turns, in_turn_with_call = turns + 1, True
        return turns

    def events(self) -> list[tuple[str, Any]]:
        """The history normalized across APIs, in order: ("turn", None) opens each assistant turn, then
        ("assistant", text) / ("call", (id, name, arguments)); ("user", text) for user-written text and
        ("result", (id, text)) for tool results."""
        if self._events is None:
            self._events = list(self._walk())
        return self._events

    # -- per API ----------------------------------------------------------------------------------------------
    def _items(self) -> list[dict[str, Any]]:
        items = self.body.get("input")
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        return [*self.prior_items, *(items or [])]

    def _walk(self) -> Iterator[tuple[str, Any]]:
        if self.api == "gemini":
            yield from _walk_gemini(self.body.get("contents") or [])
            return
        if self.api == "converse":
            yield from _walk_converse(self.body.get("messages") or [])
            return
        if self.api == "anthropic":
            for msg in self.body.get("messages") or []:
                role, content = msg.get("role"), msg.get("content")
                if role == "assistant":
                    yield "turn", None
                if role not in ("user", "assistant"):
                    continue
                for b in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
                    if b.get("type") == "text":
                        yield role, b["text"]
                    elif b.get("type") == "tool_use":
                        yield "call", (b["id"], b["name"], b.get("input"))
                    elif b.get("type") == "tool_result":
                        yield "result", (b["tool_use_id"], _flat(b.get("content")))
        elif self.api == "openai_chat":
            for msg in self.body.get("messages") or []:
                role = msg.get("role")
                if role == "assistant":
                    yield "turn", None
                if role in ("user", "assistant") and msg.get("content"):
                    yield role, _flat(msg.get("content"))
                for call in msg.get("tool_calls") or []:
                    fn = call.get("function") or {}
                    yield "call", (call["id"], fn.get("name", ""), _loads(fn.get("arguments")))
                if role == "tool":
                    yield "result", (msg.get("tool_call_id", ""), _flat(msg.get("content")))
        else:
            assistant_side = False
            for item in self._items():
                kind = item.get("type", "message")
                role = item.get("role") if kind == "message" else None
                mine = role == "assistant" or kind in ("function_call", "custom_tool_call", "reasoning")
                if mine and not assistant_side:
                    yield "turn", None
                assistant_side = mine
                if role in ("user", "assistant"):
                    yield role, _flat(item.get("content"))
                elif kind in ("function_call", "custom_tool_call"):
                    yield "call", (item["call_id"], item["name"], _loads(item.get("arguments", item.get("input"))))
                elif kind in ("function_call_output", "custom_tool_call_output"):
                    out = item.get("output")
                    yield "result", (item["call_id"], out if isinstance(out, str) else _flat(out))


def _walk_gemini(contents: list[dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    for content in contents:
        role = content.get("role", "user")
        if role == "model":
            yield "turn", None
        for part in content.get("parts") or []:
            if isinstance(part.get("text"), str) and not part.get("thought"):
                yield ("assistant" if role == "model" else "user"), part["text"]
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                yield "call", (call.get("id") or call.get("name"), call.get("name", ""), call.get("args"))
            elif isinstance(part.get("functionResponse"), dict):
                answer = part["functionResponse"]
                response = answer.get("response")
                if isinstance(response, dict) and len(response) == 1 and isinstance(next(iter(response.values())), str):
                    text = next(iter(response.values()))
                else:
                    text = json.dumps(response, ensure_ascii=False)
                yield "result", (answer.get("id") or answer.get("name"), text)


def _walk_converse(messages: list[dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    for msg in messages:
        role = str(msg.get("role"))
        if role == "assistant":
            yield "turn", None
        for block in msg.get("content") or []:
            if isinstance(block.get("text"), str):
                yield role, block["text"]
            elif isinstance(block.get("toolUse"), dict):
                use = block["toolUse"]
                yield "call", (use.get("toolUseId"), use.get("name", ""), use.get("input"))
            elif isinstance(block.get("toolResult"), dict):
                result = block["toolResult"]
                text = "".join(
                    str(p["text"]) if "text" in p else json.dumps(p.get("json"), ensure_ascii=False)
                    for p in result.get("content") or []
                )
                yield "result", (result.get("toolUseId"), text)


def _has_type(blocks: list[Any], kind: str) -> bool:
    return any(isinstance(b, dict) and b.get("type") == kind for b in blocks)


def _flat(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in (
                "text", "input_text", "output_text")
        )  # fmt: skip
    return str(content)


def _loads(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


# -- the default script --------------------------------------------------------------------------------------------
SHELL_TOOLS = (
    "bash", "shell", "exec_command", "shell_command", "run_shell_command", "local_shell",
    "exec",  # OpenClaw
    "run_commands",  # Cline: {"commands": [...]}
)  # fmt: skip
READ_TOOLS = ("read", "read_file", "view", "read_large_output")
SEARCH_TOOLS = ("search_large_output",)
DIRECTIVE = re.compile(r"^[ \t]*@(run|read|search|call|answer)\s+(.*)$", re.MULTILINE)


class AgentScript:
    """A default that real agents can follow: directives in the user's text, one per tool-calling turn.

        @run <shell command>       call the agent's shell tool (Claude Code `Bash`, Codex `shell` / `exec_command`,
                                   OpenClaw `exec`, Cline `run_commands`)
        @read <path>               call the agent's file-read tool (falls back to `cat` through the shell)
        @search <pattern>          call the gateway's retrieval tool `search_large_output` (literal pattern)
        @call <tool> <json args>   call any tool by name
        @answer <regex>            final text: `ANSWER: <first match of regex in the tool results, newest first>`

    The directives are those of the latest user message that has any (one task per prompt); the step to take is
    the number of tool-calling assistant turns after that message, so the script is stateless (a gateway's
    transparent retrieval loop, a retry or a replay all see the same decision). Without directives it
    echoes the last user text; a request without tools (titles, summaries) gets a short text.
    """

    def __call__(self, turn: Turn) -> Step:
        if not turn.body.get("tools") and not turn.tool_names:
            return reply("Scripted session")
        directives: list[tuple[str, str]] = []
        position = -1
        for index, (kind, text) in enumerate(turn.events()):
            found = [(m.group(1), m.group(2).strip()) for m in DIRECTIVE.finditer(text)] if kind == "user" else []
            if found:
                directives, position = found, index
        if not directives:
            return reply(f"echo: {turn.last_user_text[:500]}")
        step = turn.tool_turns_after(position)
        if step >= len(directives):
            return reply("done")
        verb, arg = directives[step]
        if verb == "answer":
            return reply(self.answer(turn, arg))
        call = self.call_for(turn, verb, arg)
        if call is None:
            return reply(f"cannot {verb}: none of the tools {turn.tool_names} fits")
        return reply(Text(f"Step {step + 1}: {verb} {arg}"), call)

    @staticmethod
    def answer(turn: Turn, pattern: str) -> str:
        regex = re.compile(pattern)
        for exchange in reversed(turn.exchanges()):
            found = regex.search(exchange.result or "")
            if found:
                return f"ANSWER: {found.group(0)}"
        return "ANSWER: not found"

    @staticmethod
    def call_for(turn: Turn, verb: str, arg: str) -> ToolCall | None:
        names = {n.lower(): n for n in turn.tool_names}
        if verb == "call":
            name, _, raw = arg.partition(" ")
            return ToolCall(name, json.loads(raw) if raw.strip() else {}) if name in turn.tool_names else None
        if verb == "search":
            search = next((names[n] for n in SEARCH_TOOLS if n in names), None)
            return ToolCall(search, {"pattern": arg, "literal": True}) if search else None
        if verb == "read":
            for candidate in READ_TOOLS[:3]:
                if candidate in names:
                    spec = turn.tool(names[candidate]) or {}
                    props = _properties(spec)
                    key = next((k for k in ("file_path", "path", "filename") if k in props), "file_path")
                    return ToolCall(names[candidate], {key: arg})
            arg = f"cat {arg}"
        shell = next((names[n] for n in SHELL_TOOLS if n in names), None)
        if shell is None:
            return None
        props = _properties(turn.tool(shell) or {})
        if props.get("commands", {}).get("type") == "array":
            return ToolCall(shell, {"commands": [arg]})
        if "command" in props:
            if props["command"].get("type") == "array":
                return ToolCall(shell, {"command": ["bash", "-lc", arg]})
            args: dict[str, Any] = {"command": arg}
            if "description" in props:
                args["description"] = "Run the requested command"
            return ToolCall(shell, args)
        if "cmd" in props:
            return ToolCall(shell, {"cmd": arg})
        return ToolCall(shell, {"command": arg})


def _properties(spec: dict[str, Any]) -> dict[str, Any]:
    schema = spec.get("input_schema") or spec.get("parameters") or spec.get("parametersJsonSchema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def resolve(step: Step, turn: Turn) -> Reply | ApiError:
    for _ in range(16):
        if isinstance(step, (Reply, ApiError)):
            return step
        if isinstance(step, str):
            return reply(step)
        step = step(turn)
    raise TypeError("a script step kept returning callables")
