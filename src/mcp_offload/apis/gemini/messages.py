"""The Gemini `contents` format: `{"role": "user" | "model", "parts": [part, …]}`.

A part is one of `text` (with `thought: true` for a thought summary), `inlineData` / `fileData`, `functionCall`
(`{"id"?, "name", "args"}`, in model contents) or `functionResponse` (`{"id"?, "name", "response": {…}, "parts"?}`,
in user contents; older clients use `role: "function"`), `executableCode`, `codeExecutionResult`; any part may carry
a `thoughtSignature`. A user content without a `functionResponse` part opens a turn.

Tool results are JSON objects, not text. What is read and replaced:
- a `response` with one key holding a string (`{"output": "…"}` from Gemini CLI, `{"error": "…"}`, `{"result": "…"}`)
  is that string, and its replacement keeps the key: `{"output": "<reference>"}`;
- any other object (`{"result": {…}}`, several keys) is read as its JSON text (stored as JSON, so previews and
  `query_large_output` see its structure) and replaced by `{"<its one key, else output>": "<reference>"}`.
The part stays a valid `functionResponse` with its `id`, `name` and everything else it carries.

Calls and results are matched by `id`; clients that send none (SDK apps on models that mint none) are matched by
`name`, which is then the call id the record keys on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.message import (
    OFFLOADED_ARGUMENTS,
    BlocksRead,
    Message,
    MessageView,
    Part,
    ToolCallRef,
    ToolResult,
    bad,
    dump,
    require_str,
)
from mcp_offload.core.encoded_bytes import decode_base64

ROLES = ("user", "model", "function")
OUTPUT_KEY = "output"


def call_id_of(call: dict[str, Any]) -> str:
    """The id a `functionCall` / `functionResponse` is matched by: its `id`, else its `name`."""
    found = call.get("id")
    return found if isinstance(found, str) and found else str(call.get("name", ""))


def response_text(response: Any) -> str:
    """What the model reads of a `functionResponse.response` (see the module docstring)."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response, ensure_ascii=False)


def replaced_response(response: Any, text: str) -> dict[str, Any]:
    """The `response` object standing for `text` (a reference), keeping a lone key's name."""
    if isinstance(response, dict) and len(response) == 1:
        return {next(iter(response)): text}
    return {OUTPUT_KEY: text}


class GeminiFormat:
    def to_dict(self, message: object, index: int) -> Message:
        if isinstance(message, dict):
            return message
        model_dump = getattr(message, "model_dump", None)  # a google-genai `types.Content`: its wire form
        if callable(model_dump):
            dumped = model_dump(mode="json", exclude_none=True, by_alias=True)
            if isinstance(dumped, dict):
                return dumped
        return dump(message, index)

    def view(self, message: Message, index: int) -> MessageView:
        role = message.get("role", "user")
        if role not in ROLES:
            raise bad(index, f"unknown role {role!r} for the Gemini API (user or model)")
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise bad(index, "parts must be a list")
        read = BlocksRead()
        for slot, part in enumerate(parts):
            if not isinstance(part, dict):
                raise bad(index, f"part {slot} must be an object")
            if isinstance(part.get("text"), str) and not part.get("thought"):
                read.texts.append(part["text"])
            elif "inlineData" in part or "fileData" in part:
                read.images += 1
            call = part.get("functionCall")
            if isinstance(call, dict) and role == "model":
                name = require_str(call.get("name"), index, f"functionCall part {slot} name")
                arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
                read.calls.append(ToolCallRef(call_id_of(call), name, arguments))
                read.texts.append(f"[called {name} {arguments}]")
            answer = part.get("functionResponse")
            if isinstance(answer, dict):
                if role == "model":
                    raise bad(index, "functionResponse parts belong in user contents")
                require_str(answer.get("name"), index, f"functionResponse part {slot} name")
                text = response_text(answer.get("response", {}))
                read.result(slot, call_id_of(answer), (Part(0, text=text), *self._inline_parts(answer.get("parts"))))
        return read.view("assistant" if role == "model" else "user", user=role == "user")

    @staticmethod
    def _inline_parts(parts: Any) -> list[Part]:
        """The images of a multimodal function response (`functionResponse.parts[].inlineData`)."""
        found: list[Part] = []
        for i, part in enumerate(parts if isinstance(parts, list) else []):
            data = part.get("inlineData") if isinstance(part, dict) else None
            if isinstance(data, dict):
                decoded = decode_base64(str(data.get("data", "")))
                if decoded is not None:
                    found.append(Part(i + 1, image=decoded, mime_type=str(data.get("mimeType") or "")))
        return found

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        if 0 not in texts:
            return message
        parts = list(message["parts"])
        part = parts[result.slot]
        answer = part["functionResponse"]
        new_answer = {**answer, "response": replaced_response(answer.get("response"), texts[0])}
        parts[result.slot] = {**part, "functionResponse": new_answer}
        return {**message, "parts": parts}

    def note_message(self, text: str) -> Message:
        return {"role": "user", "parts": [{"text": text}]}

    def prepend_note(self, message: Message, text: str) -> Message:
        return {**message, "parts": [{"text": text}, *(message.get("parts") or [])]}

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        parts = []
        for part in message["parts"]:
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict) and call_id_of(call) == call_id:
                part = {**part, "functionCall": {**call, "args": {OFFLOADED_ARGUMENTS: text}}}
            parts.append(part)
        return {**message, "parts": parts}

    def could_be(self, message: Mapping[str, Any]) -> bool:
        return (
            "content" not in message and message.get("role", "user") in ROLES and isinstance(message.get("parts"), list)
        )
