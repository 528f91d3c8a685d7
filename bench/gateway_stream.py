"""bench/gateway.py's streaming clients: when an event carries the first delta, and the accumulators that rebuild the
model's answer from each API's stream (Gemini's: gateway_gemini.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench import gateway_gemini as gemini
from llm_upstream.errors import ApiKind


def is_delta(api: ApiKind, event: dict[str, Any]) -> bool:
    if api == "gemini":
        return gemini.is_delta(event)
    if api == "anthropic":
        return event.get("type") == "content_block_delta"
    if api == "openai_chat":
        choices = event.get("choices") or []
        return bool(choices and (choices[0]["delta"].get("content") or choices[0]["delta"].get("tool_calls")))
    return str(event.get("type", "")).endswith(".delta")


class AnthropicAccumulator:
    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial: dict[int, str] = {}

    def send(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "content_block_start":
            self.blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            block, delta = self.blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                self.partial[event["index"]] = self.partial.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif kind == "content_block_stop" and event["index"] in self.partial:
            self.blocks[event["index"]]["input"] = json.loads(self.partial.pop(event["index"]) or "{}")

    def result(self) -> list[dict[str, Any]]:
        return [self.blocks[i] for i in sorted(self.blocks)]


class ChatAccumulator:
    def __init__(self) -> None:
        self.text: str | None = None
        self.calls: dict[int, dict[str, Any]] = {}

    def send(self, event: dict[str, Any]) -> None:
        for choice in event.get("choices") or []:
            delta = choice["delta"]
            if delta.get("content"):
                self.text = (self.text or "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    call["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                slot["id"] = call.get("id") or slot["id"]
                fn = call.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""

    def result(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return message


class ResponsesAccumulator:
    def __init__(self) -> None:
        self.output: list[dict[str, Any]] = []

    def send(self, event: dict[str, Any]) -> None:
        if event.get("type") == "response.completed":
            self.output = event["response"]["output"]

    def result(self) -> list[dict[str, Any]]:
        return self.output


ACCUMULATORS: dict[ApiKind, Callable[[], Any]] = {
    "anthropic": AnthropicAccumulator,
    "openai_chat": ChatAccumulator,
    "responses": ResponsesAccumulator,
    "gemini": gemini.GeminiAccumulator,
}
