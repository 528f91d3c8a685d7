"""The retrieval loop's exchange in the client's API, as LiteLLM's hooks hand it over: what one round adds to the
follow-up request, and what the client's copy of the final answer stands for.

LiteLLM gives the hooks its own response objects (a `ModelResponse` for Chat, an Anthropic Messages dict, a
`ResponsesAPIResponse`); here they become plain JSON (`response_json`) and the API's own `Dialect` reads them
(`answer_text`, `final_answer`), so nothing here knows an API's shape, and nothing imports LiteLLM. Which API a
response is in is told by the response itself (`response_api`): the API whose `answer_field` holds a list, else
LiteLLM's own (`completion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.dialect import Answer, FinalAnswer, ModelToolCall
from mcp_offload.apis.message import Message
from mcp_offload.apis.registry import APIS
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES

__all__ = ["FinalAnswer", "api_of_call_type", "final_answer", "response_api", "response_text", "round_messages"]

# (a retrieval call as LiteLLM reads it: id, name, arguments; its answer)
Answered = Sequence[tuple[dict[str, Any], str]]


def api_of_call_type(call_type: object) -> LlmApi | None:
    """The API of a LiteLLM call type (`CallType.acompletion` or its value); None for one the guardrail leaves be."""
    value = str(getattr(call_type, "value", call_type))
    return next((api for api in APIS.values() if value in api.litellm_call_types), None)


def response_api(response: Any) -> LlmApi:
    """The API a LiteLLM response object is in (see the module docstring)."""
    found = _api_of(response_json(response))
    if found is None:
        raise LookupError("no API serves LiteLLM's completion call type")
    return found


def response_text(response: Any) -> str:
    """The text the model wrote beside its tool calls (in the response's own API)."""
    answer = response_json(response)
    api = _api_of(answer)
    return api.dialect.answer_text(answer) if api is not None else ""


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
    """The loop's last response as the client holds it and as it goes upstream (`Dialect.final_answer`); None when it
    is not one the client can send back as it is (a stream, an unknown shape, or one that still calls a retrieval
    tool). A whole answer LiteLLM replays as a stream (Anthropic Messages: `FakeAnthropicMessagesStreamIterator`) is
    read from the answer it holds (`.response`)."""
    replayed = None if isinstance(response, dict) else getattr(response, "response", None)
    return api.dialect.final_answer(
        response_json(replayed if isinstance(replayed, dict) else response), RETRIEVAL_TOOL_NAMES
    )


def response_json(response: Any) -> dict[str, Any]:
    """A LiteLLM response as a JSON object: dicts as they are, pydantic models dumped (null fields left out) at any
    depth; {} for anything else (a live stream)."""
    found = _json(response)
    return found if isinstance(found, dict) else {}


def _api_of(answer: dict[str, Any]) -> LlmApi | None:
    found = next((api for api in APIS.values() if isinstance(answer.get(api.answer_field), list)), None)
    return found or api_of_call_type("completion")


def _json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value
