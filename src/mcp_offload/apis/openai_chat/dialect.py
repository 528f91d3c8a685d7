"""OpenAI Chat Completions, response side: read an answer's tool calls, write the follow-up request, merge answers,
and splice streams.

Only the first choice takes part in the retrieval loop (agents do not ask for `n` > 1 with tools; a request that
does is relayed untouched, see loop.py).

Stream splice: chunks are forwarded as they arrive. A tool call delta of a retrieval tool is taken out of its chunk
(held) and the client's tool calls are renumbered to run from 0; the chunk carrying `finish_reason`, the usage
chunk (`stream_options.include_usage`) and `data: [DONE]` are held and written once by `finish`, with the finish
reason of the last call and every call's usage added up. Chunks of follow-up calls carry the first call's `id`, so
the client sees one completion. Keep-alives are SSE comments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.dialect import (
    Answer,
    CallOutcome,
    FinalAnswer,
    ModelToolCall,
    Round,
    arguments_text,
    parsed_arguments,
    replayed_rounds,
    with_appended,
)
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.openai_error import openai_error_document
from mcp_offload.apis.sse import COMMENT_PING, SseEvent, encode_event
from mcp_offload.apis.usage import UsageFigures, add_usage, openai_figures, usage_of

DONE = b"data: [DONE]\n\n"


def stream_error_event(code: str, message: str) -> bytes:
    """A `data:` line with the error document: what the SDK checks a chunk for."""
    return encode_event(openai_error_document(500, code, message))


def _calls(message: dict[str, Any]) -> list[ModelToolCall]:
    calls = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function") or {}
            calls.append(
                ModelToolCall(
                    id=str(call.get("id", "")),
                    name=str(function.get("name", "")),
                    arguments=parsed_arguments(function.get("arguments")),
                )
            )
    return calls


def _is_retrieval(call: Any, names: frozenset[str]) -> bool:
    return isinstance(call, dict) and (call.get("function") or {}).get("name") in names


def tool_message(answer: Answer) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": answer.call.id, "content": answer.text}


def assistant_message(content: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message as it goes back upstream: role, content and tool calls only (the response's other
    fields, such as `refusal`, `annotations` or `audio`, are not request fields everywhere)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _first_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return message if isinstance(message, dict) else {}


def _request_call(call: Any) -> dict[str, Any]:
    """An answer's tool call as a request's assistant message holds it (id, type, name and arguments only)."""
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    return {
        "id": call.get("id"),
        "type": "function",
        "function": {"name": function.get("name"), "arguments": function.get("arguments") or ""},
    }


class ChatDialect:
    api: ApiName = "openai_chat"
    end_stop = "stop"

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome:
        choices = response.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        tool_calls = [
            {
                "id": c.get("id"),
                "type": "function",
                "function": {
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments", ""),
                },
            }
            for c in calls
        ]
        return CallOutcome(
            output=assistant_message(message.get("content"), tool_calls),
            calls=_calls(message),
            stop=choice.get("finish_reason"),
            usage=usage_of(response),
            response_id=response.get("id"),
        )

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        body = with_appended(request, "messages", self.upstream_messages(rounds, None))
        if final:
            body["tool_choice"] = "none"
        return body

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]:
        return replayed_rounds(
            rounds, last, lambda said: [said.output], lambda answers: [tool_message(a) for a in answers]
        )

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        calls = [
            {
                "id": a.call.id,
                "type": "function",
                "function": {"name": a.call.name, "arguments": arguments_text(a.call.arguments)},
            }
            for a in answers
        ]
        return [{"role": "assistant", "content": text or None, "tool_calls": calls}, *map(tool_message, answers)]

    def answer_text(self, response: dict[str, Any]) -> str:
        content = _first_message(response).get("content")
        return content if isinstance(content, str) else ""

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices:
            return None
        message = _first_message(response)
        calls = [_request_call(c) for c in message.get("tool_calls") or []]
        if any(_is_retrieval(c, retrieval_names) for c in calls):
            return None
        content = message.get("content")
        said = assistant_message(content if isinstance(content, str) else None, calls)
        return FinalAnswer(client_copy=said, messages=[said])

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        kept = [c for c in outcome.output.get("tool_calls") or [] if not _is_retrieval(c, retrieval_names)]
        message = assistant_message(outcome.output.get("content"), kept)
        return CallOutcome(message, _calls(message), outcome.stop, outcome.usage, outcome.response_id)

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        message = (merged.get("choices") or [{}])[0].get("message") or {}
        return (message.get("content"), message.get("tool_calls") or [])

    def client_message(self, client_output: Any) -> dict[str, Any]:
        content, tool_calls = client_output
        return assistant_message(content, tool_calls)

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any:
        merged = dict(responses[0])
        texts: list[str] = []
        kept: list[dict[str, Any]] = []
        usage: dict[str, Any] = {}
        choice: dict[str, Any] = {}
        for response in responses:
            choice = dict((response.get("choices") or [{}])[0])
            message = choice.get("message") or {}
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
            kept.extend(c for c in message.get("tool_calls") or [] if not _is_retrieval(c, retrieval_names))
            add_usage(usage, response.get("usage"))
        message = dict(choice.get("message") or {"role": "assistant"})
        message["content"] = "".join(texts) if texts else None
        message["tool_calls"] = kept or None
        choice["message"] = message
        choice["finish_reason"] = stop or choice.get("finish_reason")
        merged["choices"] = [choice]
        if usage:
            merged["usage"] = usage
        return merged

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> ChatSplicer:
        return ChatSplicer(retrieval_names, client_usage=client_usage)

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        if event.data == "[DONE]":
            return True
        if '"error"' in event.data and "error" in event.json():
            return True
        if '"usage"' in event.data:
            found = event.json().get("usage")
            if isinstance(found, dict):
                usage.clear()
                usage.update(found)
        return False

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        return usage_of(response)

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        return openai_figures(usage, input_key="prompt_tokens", output_key="completion_tokens")


class ChatSplicer:
    def __init__(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> None:
        self.names = retrieval_names
        self.client_usage = client_usage  # False: the gateway asked for the usage chunk, the client did not
        self.errored = False
        self._calls = 0
        self._id: str | None = None  # the first call's completion id
        self._template: dict[str, Any] = {}  # fields every chunk repeats (object, created, model, ...)
        self._next_tool = 0  # the client's next tool call index
        self._tool_index: dict[int, int | None] = {}  # this call's tool call index -> the client's (None: held)
        self._tools: dict[int, dict[str, Any]] = {}  # this call's tool calls, accumulated
        self._text: list[str] = []  # this call's content
        self._client_text: list[str] = []
        self._client_tools: list[dict[str, Any]] = []
        self._usage: dict[str, Any] = {}
        self._total: dict[str, Any] = {}
        self._usage_seen = False
        self._stop: str | None = None
        self._complete = False
        self._in_call = False

    def _begin_call(self) -> None:
        self._calls += 1
        self._in_call = True
        self._tool_index, self._tools, self._text = {}, {}, []
        self._usage, self._stop, self._complete = {}, None, False

    def feed(self, event: SseEvent) -> list[bytes]:
        if not event.data:
            return [event.raw]  # a comment or an empty event
        if event.data == "[DONE]":
            self._complete = True
            return []
        data = event.json()
        if not isinstance(data, dict):
            return [event.raw]
        if "error" in data:
            self.errored = True
            return [event.raw]
        if not self._in_call:
            self._begin_call()
        if self._id is None:
            self._id = data.get("id")
        self._template = {k: v for k, v in data.items() if k not in ("choices", "usage", "id")}
        changed = self._calls > 1 and data.get("id") != self._id
        usage = data.get("usage")
        if isinstance(usage, dict):
            self._usage, self._usage_seen, changed = dict(usage), True, True
            data["usage"] = None
        choices = data.get("choices") or []
        kept_choices = []
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                kept_choices.append(choice)
                continue
            choice_changed, keep = self._choice(choice)
            changed = changed or choice_changed
            if keep:
                kept_choices.append(choice)
        if not changed:
            return [event.raw]
        if not kept_choices and (choices or data.get("usage") is None):
            return []
        data["choices"] = kept_choices
        if self._id is not None:
            data["id"] = self._id
        if data.get("usage") is None:
            data.pop("usage", None)
        return [encode_event(data)]

    def _choice(self, choice: dict[str, Any]) -> tuple[bool, bool]:
        """Accumulate one choice-0 delta, take out what is held; (changed, still worth sending)."""
        changed = False
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self._text.append(delta["content"])
            self._client_text.append(delta["content"])
        if choice.get("finish_reason") is not None:
            self._stop = choice["finish_reason"]
            choice["finish_reason"] = None
            changed = True
        tool_deltas = delta.get("tool_calls")
        if isinstance(tool_deltas, list):
            kept = []
            for tool_delta in tool_deltas:
                out = self._tool_delta(tool_delta)
                if out is None:
                    changed = True
                    continue
                if out != tool_delta.get("index"):
                    tool_delta = {**tool_delta, "index": out}
                    changed = True
                kept.append(tool_delta)
            if kept:
                delta["tool_calls"] = kept
            else:
                delta.pop("tool_calls")
        worth = bool(delta) or choice.get("logprobs") is not None
        return changed, worth or not changed

    def _tool_delta(self, tool_delta: Any) -> int | None:
        """The client's index for this tool call delta (None: a retrieval call, held)."""
        if not isinstance(tool_delta, dict):
            return None
        index = tool_delta.get("index", 0)
        function = tool_delta.get("function") or {}
        if index not in self._tool_index:
            call = {
                "id": tool_delta.get("id"),
                "type": "function",
                "function": {"name": function.get("name"), "arguments": ""},
            }
            self._tools[index] = call
            if function.get("name") in self.names:
                self._tool_index[index] = None
            else:
                self._tool_index[index] = self._next_tool
                self._next_tool += 1
                self._client_tools.append(call)
        call = self._tools[index]
        if tool_delta.get("id") and not call.get("id"):
            call["id"] = tool_delta["id"]
        if isinstance(function.get("arguments"), str):
            call["function"]["arguments"] += function["arguments"]
        return self._tool_index[index]

    def call_complete(self) -> bool:
        return self._complete

    def end_call(self) -> CallOutcome:
        self._in_call = False
        add_usage(self._total, self._usage)
        tools = [self._tools[i] for i in sorted(self._tools)]
        output = assistant_message("".join(self._text) if self._text else None, tools)
        return CallOutcome(output=output, calls=_calls(output), stop=self._stop, usage=dict(self._usage))

    def finish(self, stop: str | None = None) -> list[bytes]:
        base = {"id": self._id, **self._template}
        out = [encode_event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": stop or self._stop}]})]
        if self._usage_seen and self.client_usage:
            out.append(encode_event({**base, "choices": [], "usage": self._total}))
        out.append(DONE)
        return out

    def ping(self) -> bytes | None:
        return COMMENT_PING

    def error(self, code: str, message: str) -> bytes:
        return stream_error_event(code, message)

    def client_output(self) -> Any:
        return ("".join(self._client_text) if self._client_text else None, list(self._client_tools))
