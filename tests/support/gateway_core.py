"""Builders for the gateway core tests: request bodies of the four APIs (validated with the SDKs' own request
types; Gemini: google-genai's `Content` / `Tool` models, which forbid unknown fields), a tool-heavy conversation
simulator, and services on a filesystem or Redis store.

`validate_body(api, body)` runs the body through pydantic validation of the SDK's `*CreateParamsNonStreaming`
TypedDict (iterables consumed, so every message and block is checked), the same shapes the SDK clients send.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anthropic.types.beta.message_create_params import MessageCreateParamsNonStreaming as BetaCreateParams
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google.genai import types as genai_types
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter
from pydantic_core import ValidationError

from mcp_offload.apis.names import ApiName
from mcp_offload.core.services import Services, build_services
from mcp_offload.settings import Settings

APIS: tuple[ApiName, ...] = ("anthropic", "openai_chat", "responses", "gemini")
_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    "anthropic": TypeAdapter(MessageCreateParamsNonStreaming),
    "anthropic_beta": TypeAdapter(BetaCreateParams),  # compaction blocks, context_management, betas
    "openai_chat": TypeAdapter(CompletionCreateParamsNonStreaming),
    "responses": TypeAdapter(ResponseCreateParamsNonStreaming),
}


def _consume(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _consume(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_consume(v) for v in value]
    if type(value).__name__ == "ValidatorIterator":
        return [_consume(v) for v in value]
    return value


_GEMINI_FIELDS: dict[str, TypeAdapter[Any]] = {
    "contents": TypeAdapter(list[genai_types.Content]),
    "tools": TypeAdapter(list[genai_types.Tool]),
    "systemInstruction": TypeAdapter(genai_types.Content),
    "toolConfig": TypeAdapter(genai_types.ToolConfig),
    "generationConfig": TypeAdapter(genai_types.GenerationConfig),
}


def validate_body(api: str, body: dict[str, Any]) -> None:
    """Raises pydantic's ValidationError when `body` is not a valid request of `api` per its SDK's types."""
    if api == "gemini":
        unknown = [k for k in body if k not in _GEMINI_FIELDS]
        if unknown:
            raise ValueError(f"unknown Gemini request fields: {unknown}")
        for key, value in body.items():
            _GEMINI_FIELDS[key].validate_python(value)
        return
    _consume(_ADAPTERS[api].validate_python(body))


def is_valid(api: str, body: dict[str, Any]) -> bool:
    try:
        validate_body(api, body)
    except ValidationError:
        return False
    return True


def wire(value: Any) -> str:
    """The bytes a server forwards (key order as built, no spaces): what the provider's cache sees."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def big_text(rng: random.Random, tokens: int, tag: str) -> str:
    """Text of about `tokens` tokens: numbered log lines with some unicode."""
    lines: list[str] = []
    words = ["alpha", "beta", "gamma", "délta", "εψιλον", "zeta", "日本", "theta", "iota", "kappa"]
    while len(lines) * 9 < tokens:
        lines.append(f"{tag} line {len(lines)}: " + " ".join(rng.choice(words) for _ in range(6)))
    return "\n".join(lines)


CLIENT_TOOLS = {
    "anthropic": [
        {"name": "bash", "description": "Run a shell command", "input_schema": {"type": "object", "properties": {}}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    ],
    "openai_chat": [
        {"type": "function", "function": {"name": "bash", "description": "Run", "parameters": {"type": "object"}}}
    ],
    "responses": [
        {"type": "function", "name": "bash", "description": "Run", "parameters": {"type": "object"}, "strict": False}
    ],
    "gemini": [
        {"functionDeclarations": [{"name": "bash", "description": "Run", "parametersJsonSchema": {"type": "object"}}]},
        {"googleSearch": {}},
    ],
}


def client_tools(api: ApiName) -> list[dict[str, Any]]:
    """A deep copy of the client's tool list (tests mutate theirs)."""
    tools: list[dict[str, Any]] = json.loads(json.dumps(CLIENT_TOOLS[api]))
    return tools


def make_body(api: ApiName, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    if api == "anthropic":
        return {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": system,
            "messages": messages,
            "tools": tools,
        }
    if api == "openai_chat":
        return {"model": "gpt-4.1", "messages": [{"role": "system", "content": system}, *messages], "tools": tools}
    if api == "gemini":  # the model is in the path (rewrite_request(..., model=...))
        return {
            "contents": messages,
            "systemInstruction": {"parts": [{"text": system}]},
            "tools": tools,
            "generationConfig": {"temperature": 0.2},
        }
    return {"model": "gpt-5", "instructions": system, "input": messages, "tools": tools}


def user_text(api: ApiName, text: str) -> dict[str, Any]:
    if api == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    return {"role": "user", "content": text}


def model_turn(api: ApiName, calls: list[tuple[str, str, dict[str, Any]]], text: str, n: int) -> list[dict[str, Any]]:
    """What the client appends for a model response calling `calls` [(id, name, input)] (with reasoning)."""
    if api == "anthropic":
        blocks: list[dict[str, Any]] = [
            {"type": "thinking", "thinking": f"plan {n}", "signature": f"sig-{n}-" + "A" * 40},
            {"type": "text", "text": text},
        ]
        blocks += [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
        return [{"role": "assistant", "content": blocks}]
    if api == "gemini":  # Gemini CLI's shape: thought parts dropped, the call's id and thoughtSignature kept
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for k, (cid, name, args) in enumerate(calls):
            part: dict[str, Any] = {"functionCall": {"id": cid, "name": name, "args": args}}
            if k == 0:
                part["thoughtSignature"] = f"sig-{n}-" + "A" * 40
            parts.append(part)
        return [{"role": "model", "parts": parts}]
    if api == "openai_chat":
        return [
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, name, args in calls
                ],
            }
        ]
    items: list[dict[str, Any]] = [
        {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"enc-{n}-" + "B" * 40}
    ]
    if text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{n}",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    items += [
        {"type": "function_call", "call_id": cid, "name": name, "arguments": json.dumps(args)}
        for cid, name, args in calls
    ]
    return items


def results_turn(api: ApiName, results: list[tuple[str, str]], user: str | None = None) -> list[dict[str, Any]]:
    """The client's tool results [(call id, text)] (Anthropic: one user message, optionally with user text)."""
    if api == "anthropic":
        blocks: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": cid, "content": text} for cid, text in results
        ]
        if user:
            blocks.append({"type": "text", "text": user})
        return [{"role": "user", "content": blocks}]
    if api == "gemini":
        parts: list[dict[str, Any]] = [
            {"functionResponse": {"id": cid, "name": "bash", "response": {"output": text}}} for cid, text in results
        ]
        if user:
            parts.append({"text": user})
        return [{"role": "user", "parts": parts}]
    if api == "openai_chat":
        out: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": cid, "content": text} for cid, text in results]
    else:
        out = [{"type": "function_call_output", "call_id": cid, "output": text} for cid, text in results]
    if user:
        out.append({"role": "user", "content": user})
    return out


@dataclass
class Conversation:
    """A tool-heavy conversation the client grows turn by turn (deterministic for a seed)."""

    api: ApiName
    seed: int
    system: str = "You are a careful coding agent."
    large_every: int = 3  # one result in `large_every` is large
    large_tokens: int = 600
    small_tokens: int = 40
    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.messages.append(user_text(self.api, f"Fix the failing tests (conversation {self.seed})."))

    def body(self) -> dict[str, Any]:
        return make_body(self.api, self.system, list(self.messages), client_tools(self.api))

    def advance(self) -> None:
        """The model calls 1-3 tools; the client runs them and appends the results (sometimes with a user remark)."""
        self.turn += 1
        n = self.turn
        calls = [(f"call_{n}_{k}", "bash", {"cmd": f"step {n}.{k}"}) for k in range(self.rng.randint(1, 3))]
        self.messages += model_turn(self.api, calls, f"Running step {n}.", n)
        results = []
        for cid, _, _ in calls:
            large = self.rng.randrange(self.large_every) == 0
            size = self.large_tokens if large else self.small_tokens
            results.append((cid, big_text(self.rng, self.rng.randint(size, size * 2), cid)))
        remark = f"Also check module {n}." if self.rng.random() < 0.2 else None
        self.messages += results_turn(self.api, results, remark)


def settings_for(store: str, **overrides: Any) -> Settings:
    return Settings(store=store, jq_timeout_s=3.0, jq_workers=1, **overrides)


@asynccontextmanager
async def open_services(store: str | Path, **overrides: Any) -> AsyncIterator[Services]:
    services = build_services(settings_for(str(store), **overrides))
    try:
        yield services
    finally:
        await services.aclose()


HeadersFactory = Callable[[str], dict[str, str]]


def headers_for(api: ApiName, credential: str) -> dict[str, str]:
    if api == "anthropic":
        return {"x-api-key": credential, "anthropic-version": "2023-06-01"}
    if api == "gemini":
        return {"x-goog-api-key": credential}
    return {"authorization": f"Bearer {credential}"}
