"""Gemini `generateContent` requests: `contents` (user / model), `systemInstruction`, `tools` (a list of Tool
objects: `functionDeclarations`, `googleSearch`, `codeExecution`, …), `toolConfig`, `generationConfig`.

Tool results are `functionResponse` parts of user contents (read and replaced by `messages.GeminiFormat`);
everything else keeps its identity: `systemInstruction` is outside `contents`, thought parts and every
`thoughtSignature` are never touched, and the last user turn is never rewritten (only tool results are).

Matching a model answer the client sends back (expansions, session openings) is done on a normalized form:
clients re-serialize what they received (Gemini CLI merges adjacent text parts into one content and drops thought
parts; the `google-genai` SDK's chat keeps a streamed answer as one model content per chunk), so a run of model
contents reads as one, thought parts and empty text parts are dropped, adjacent plain text parts are merged and a
text part's `thoughtSignature` is ignored (a `functionCall`'s stays).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_offload.apis.gemini.messages import GeminiFormat
from mcp_offload.apis.history import History, UserText, normalized
from mcp_offload.apis.message import Message

RESULT_ROLES = ("user", "function")


def declared_names(tools: Sequence[Any]) -> set[str]:
    """The function names a request's `tools` declare."""
    names: set[str] = set()
    for tool in tools:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declaration in declarations if isinstance(declarations, list) else []:
            if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                names.add(declaration["name"])
    return names


def _normal_parts(parts: Any) -> list[Any]:
    out: list[Any] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or part.get("thought") is True:
            continue
        if set(part) <= {"text", "thoughtSignature"} and isinstance(part.get("text"), str):
            if not part["text"]:
                continue
            if out and isinstance(out[-1], dict) and set(out[-1]) == {"text"}:
                out[-1] = {"text": out[-1]["text"] + part["text"]}
            else:
                out.append({"text": part["text"]})
            continue
        signature = part.get("thoughtSignature")
        if isinstance(signature, str):  # proto `bytes`: the google-genai SDK sends it back URL-safe, the API sends it
            part = {**part, "thoughtSignature": standard_base64(signature)}  # standard: the same bytes
        out.append(part)
    return out


def standard_base64(value: str) -> str:
    """A proto `bytes` field's text in one form (standard alphabet, padded): the API reads standard and URL-safe
    base64, padded or not, as the same bytes; text that is not base64 is kept as it is."""
    try:
        raw = base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "=" * (-len(value) % 4))
    except ValueError:
        return value
    return base64.b64encode(raw).decode("ascii")


class GeminiHistory(History):
    api = "gemini"
    format = GeminiFormat()
    messages_key = "contents"
    outputs_run_together = True
    tool_results_follow_as_messages = False

    def messages(self, body: Mapping[str, Any]) -> list[Message] | None:
        """None (forwarded as is) for a request on an explicit cache (`cachedContent`): Gemini refuses `tools` there,
        so the retrieval tools could not be added."""
        if body.get("cachedContent") or body.get("cached_content"):
            return None
        return super().messages(body)

    def with_tools(self, body: Mapping[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The retrieval tools as one more Tool object after the client's, without the functions the client
        declares itself (Gemini refuses a name declared twice); `body` as is when nothing is left to add."""
        own = self.tools(body)
        taken = declared_names(own)
        added = []
        for tool in tools:
            declarations = [d for d in tool.get("functionDeclarations") or [] if d.get("name") not in taken]
            if declarations:
                added.append({**tool, "functionDeclarations": declarations})
        return {**body, "tools": [*own, *added]} if added else dict(body)

    def opening(self, body: Mapping[str, Any]) -> Any:
        contents = body.get("contents")
        first = contents[0] if isinstance(contents, list) and contents else None
        system = body.get("systemInstruction")
        return {
            "system": self.normalize_message(system) if isinstance(system, dict) else system,
            "first": self.normalize_message(first) if isinstance(first, dict) else first,
        }

    def is_model_output(self, message: Message) -> bool:
        return message.get("role") == "model"

    def normalize_unit(self, messages: Sequence[Message]) -> list[Any]:
        """A run of model contents reads as one content holding all their parts (however the client split it)."""
        parts = [p for m in messages for p in (m.get("parts") or [])]
        return [self.normalize_message({"role": "model", "parts": parts})]

    def normalize_message(self, message: Message) -> Any:
        out = dict(message)
        out["role"] = out.get("role") or "user"
        if "parts" in out:
            out["parts"] = _normal_parts(out["parts"])
        return normalized(out)

    def is_result_message(self, message: Message) -> bool:
        parts = message.get("parts")
        return (
            message.get("role", "user") in RESULT_ROLES
            and isinstance(parts, list)
            and bool(parts)
            and all(isinstance(p, dict) and "functionResponse" in p for p in parts)
        )

    def merge_results(self, messages: list[Message], at: int, pending: Sequence[Message]) -> list[Message]:
        """The gateway's functionResponse parts go first in the client's next user content (which answers the
        client's own calls of the same model content); without one, they form a user content of their own."""
        parts = [p for m in pending for p in m.get("parts") or []]
        if not parts:
            return messages
        if at < len(messages) and messages[at].get("role", "user") in RESULT_ROLES:
            target = messages[at]
            merged = {**target, "parts": [*parts, *(target.get("parts") or [])]}
            return [*messages[:at], merged, *messages[at + 1 :]]
        return [*messages[:at], {"role": "user", "parts": parts}, *messages[at:]]

    def user_texts(self, messages: Sequence[Message], min_chars: int) -> list[UserText]:
        found: list[UserText] = []
        for i, message in enumerate(messages):
            if message.get("role", "user") != "user":
                continue
            for slot, part in enumerate(message.get("parts") or []):
                text = part.get("text") if isinstance(part, dict) and not part.get("thought") else None
                if isinstance(text, str) and len(text) >= min_chars:
                    found.append(UserText(i, slot, text))
        return found

    def replace_user_text(self, message: Message, slot: int, text: str) -> Message:
        parts = list(message["parts"])
        parts[slot] = {**parts[slot], "text": text}
        return {**message, "parts": parts}
