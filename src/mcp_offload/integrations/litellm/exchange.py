"""The retrieval loop's exchange in the client's API, as LiteLLM's hooks hand it over: what one round adds to the
follow-up request, and what the client's copy of the final answer stands for.

LiteLLM gives the hooks its own response objects (a `ModelResponse` for Chat, an Anthropic Messages dict, a
`ResponsesAPIResponse`); everything here reads them by field (`_get`), builds plain request-form dicts, and never
imports LiteLLM. The shape is told by the response itself (`response_api`): the API whose `answer_field` holds a
list (`output` → Responses, `content` → Anthropic Messages, `choices` → Chat), else LiteLLM's own (`completion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Answer, ModelToolCall
from mcp_offload.apis.message import Message
from mcp_offload.apis.openai_chat.dialect import assistant_message
from mcp_offload.apis.registry import APIS
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES

# (a retrieval call as LiteLLM reads it: id, name, arguments; its answer)
Answered = Sequence[tuple[dict[str, Any], str]]


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The model's last response of a loop: `client_copy`, the response as the client sends it back on its next turn
    (Chat / Anthropic: one assistant message; Responses: the list of output items), and `messages`, the same response
    in request form as it goes upstream when the expansion is restored."""

    client_copy: Message | list[Message]
    messages: list[Message]


def api_of_call_type(call_type: object) -> LlmApi | None:
    """The API of a LiteLLM call type (`CallType.acompletion` or its value); None for one the guardrail leaves be."""
    value = str(getattr(call_type, "value", call_type))
    return next((api for api in APIS.values() if value in api.litellm_call_types), None)


def response_api(response: Any) -> LlmApi:
    """The API a LiteLLM response object is in (see the module docstring)."""
    found = next((api for api in APIS.values() if isinstance(_get(response, api.answer_field), list)), None)
    fallback = api_of_call_type("completion")
    if found is None and fallback is None:
        raise LookupError("no API serves LiteLLM's completion call type")
    return found or fallback  # type: ignore[return-value]  # one of the two is set (checked above)


def response_text(response: Any) -> str:
    """The text the model wrote beside its tool calls (any of the three response shapes)."""
    choices = _get(response, "choices")
    if isinstance(choices, list) and choices:
        content = _get(_get(choices[0], "message"), "content")
        return content if isinstance(content, str) else ""
    pieces: list[str] = []
    for block in _get(response, "content") or []:
        if _get(block, "type") == "text":
            pieces.append(str(_get(block, "text") or ""))
    for item in _get(response, "output") or []:
        if _get(item, "type") == "message":
            for part in _get(item, "content") or []:
                if _get(part, "type") == "output_text":
                    pieces.append(str(_get(part, "text") or ""))
    return "".join(pieces)


def round_messages(api: LlmApi, text: str, answered: Answered) -> list[Message]:
    """What one round adds to the follow-up request: the model's text and its retrieval calls (only those: a call to
    one of the client's tools is left for the model to re-plan), then their answers (each API's
    `Dialect.round_messages`)."""
    answers = [
        Answer(ModelToolCall(str(call.get("id") or ""), str(call.get("name") or ""), call.get("arguments")), out, False)
        for call, out in answered
    ]
    return api.dialect.round_messages(text, answers)


def final_answer(api: LlmApi, response: Any) -> FinalAnswer | None:
    """The loop's last response as the client holds it and as it goes upstream; None when it is not one the client
    can send back as it is (a stream, an unknown shape, or one that still calls a retrieval tool). A whole answer
    LiteLLM replays as a stream (Anthropic Messages: `FakeAnthropicMessagesStreamIterator`) is read from the answer it
    holds (`.response`)."""
    replayed = None if isinstance(response, dict) else getattr(response, "response", None)
    if isinstance(replayed, dict):
        response = replayed
    if api.answer_field == "choices":  # Chat Completions
        choices = _get(response, "choices")
        if not isinstance(choices, list) or not choices:
            return None
        message = _get(choices[0], "message")
        content = _get(message, "content")
        calls = [_chat_call(c) for c in _get(message, "tool_calls") or []]
        if any(c["function"]["name"] in RETRIEVAL_TOOL_NAMES for c in calls):
            return None
        said = assistant_message(content if isinstance(content, str) else None, calls)
        return FinalAnswer(client_copy=said, messages=[said])
    if api.answer_field == "content":  # Anthropic Messages
        content = _get(response, "content")
        if not isinstance(content, list) or not content:
            return None
        blocks = [_plain(b) for b in content]
        if any(b.get("type") == "tool_use" and b.get("name") in RETRIEVAL_TOOL_NAMES for b in blocks):
            return None
        said = {"role": "assistant", "content": blocks}
        return FinalAnswer(client_copy=said, messages=[said])
    output = _get(response, "output")
    items = [_plain(i) for i in output] if isinstance(output, list) else []
    if not items or any(i.get("type") == "function_call" and i.get("name") in RETRIEVAL_TOOL_NAMES for i in items):
        return None
    return FinalAnswer(client_copy=items, messages=items)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _plain(value: Any) -> dict[str, Any]:
    """A block / item as a JSON object (LiteLLM hands over dicts or pydantic models), null fields left out."""
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    found = dump(exclude_none=True) if callable(dump) else {}
    return found if isinstance(found, dict) else {}


def _chat_call(call: Any) -> dict[str, Any]:
    function = _get(call, "function")
    return {
        "id": _get(call, "id"),
        "type": "function",
        "function": {"name": _get(function, "name"), "arguments": _get(function, "arguments") or ""},
    }
