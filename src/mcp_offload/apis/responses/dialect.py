"""OpenAI Responses, response side: read an answer's function calls, write the follow-up request, merge answers,
and splice streams.

Follow-up requests: with `previous_response_id` (the conversation lives at the provider) the follow-up chains on
the last response and sends only the `function_call_output` items; otherwise it resends the input plus every
output item of each call (reasoning items included, as the API asks) and the outputs. The response the client
gets carries the LAST call's id, so a client that chains with `previous_response_id` continues from a response
whose stored state holds the whole exchange. A stream cannot do that: its `response.created` (the first call's id)
is sent before anyone knows a follow-up will come, and the SDKs require the lifecycle events to keep one id, so a
spliced stream reports the first call's id throughout (known limit: a client that streams AND chains with
`previous_response_id` after a transparent loop chains on a stored response whose retrieval calls have no output;
use `store: false` with full input, as Codex does, or visible retrieval).

Stream splice: `response.created` / `response.in_progress` of the first call are forwarded, later calls' are
swallowed. Every other event is forwarded as it arrives with `sequence_number` continuing the client's count and
`output_index` renumbered; a `function_call` item of a retrieval tool is held back whole (all events with its
output index). `response.completed` (or `response.incomplete`) is held and written once by `finish`, with the
client's output items and every call's usage added up. Keep-alives are SSE comments.
"""

from __future__ import annotations

import copy
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
)
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.sse import COMMENT_PING, SseEvent, encode_event
from mcp_offload.apis.usage import UsageFigures, add_usage, openai_figures, usage_of

_TERMINAL = ("response.completed", "response.incomplete")


def stream_error_event(code: str, message: str, sequence_number: int = 0) -> bytes:
    """An `error` event (`{"type": "error", "code", "message", "param", "sequence_number"}`)."""
    data = {"type": "error", "code": code, "message": message, "param": None, "sequence_number": sequence_number}
    return encode_event(data, "error")


def _calls(items: list[dict[str, Any]]) -> list[ModelToolCall]:
    calls = []
    for item in items:
        if item.get("type") == "function_call":
            raw = item.get("arguments")
            arguments = parsed_arguments(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            calls.append(
                ModelToolCall(id=str(item.get("call_id", "")), name=str(item.get("name", "")), arguments=arguments)
            )
    return calls


def _is_retrieval(item: Any, names: frozenset[str]) -> bool:
    return isinstance(item, dict) and item.get("type") == "function_call" and item.get("name") in names


def call_output(answer: Answer) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": answer.call.id, "output": answer.text}


def _input_items(request: dict[str, Any]) -> list[Any]:
    given = request.get("input")
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return list(given or [])


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class ResponsesDialect:
    api: ApiName = "responses"
    end_stop = "completed"

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome:
        items = [i for i in response.get("output") or [] if isinstance(i, dict)]
        return CallOutcome(
            output=items,
            calls=_calls(items),
            stop=response.get("status"),
            usage=usage_of(response),
            response_id=response.get("id"),
        )

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        body = dict(request)
        if request.get("previous_response_id") and rounds[-1].outcome.response_id:
            body["previous_response_id"] = rounds[-1].outcome.response_id
            body["input"] = [call_output(a) for a in rounds[-1].answers]
        else:
            body["input"] = _input_items(request) + self.upstream_messages(rounds, None)
        if final:
            body["tool_choice"] = "none"
        return body

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]:
        return replayed_rounds(
            rounds, last, lambda said: said.output, lambda answers: [call_output(a) for a in answers]
        )

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = [{"role": "assistant", "content": text}] if text else []
        for a in answers:
            call = {"type": "function_call", "call_id": a.call.id, "name": a.call.name}
            items += [{**call, "arguments": arguments_text(a.call.arguments)}, call_output(a)]
        return items

    def answer_text(self, response: dict[str, Any]) -> str:
        pieces: list[str] = []
        for item in _objects(response.get("output")):
            if item.get("type") == "message":
                parts = _objects(item.get("content"))
                pieces += [str(p.get("text") or "") for p in parts if p.get("type") == "output_text"]
        return "".join(pieces)

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        output = response.get("output")
        items = [i if isinstance(i, dict) else {} for i in output] if isinstance(output, list) else []
        if not items or any(_is_retrieval(i, retrieval_names) for i in items):
            return None
        return FinalAnswer(client_copy=items, messages=items)  # the client's copy is its list of output items

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        items = [i for i in outcome.output if not _is_retrieval(i, retrieval_names)]
        return CallOutcome(items, _calls(items), outcome.stop, outcome.usage, outcome.response_id)

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        return merged.get("output")

    def client_message(self, client_output: Any) -> Any:
        return list(client_output)  # Responses: the client's copy is its list of output items

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any:
        merged = dict(responses[-1])
        usage: dict[str, Any] = {}
        output: list[Any] = []
        for response in responses:
            output.extend(i for i in response.get("output") or [] if not _is_retrieval(i, retrieval_names))
            add_usage(usage, response.get("usage"))
        merged["output"] = output
        if usage:
            merged["usage"] = usage
        if stop:
            merged["status"] = stop
        return merged

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> ResponsesSplicer:
        return ResponsesSplicer(retrieval_names)  # the usage is part of the terminal event: always there

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        if event.name == "error":
            return True
        if event.name in _TERMINAL or event.name == "response.failed":
            found = (event.json().get("response") or {}).get("usage")
            if isinstance(found, dict):
                usage.update(found)
            return True
        return False

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        return usage_of(response)

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        return openai_figures(usage, input_key="input_tokens", output_key="output_tokens")


class ResponsesSplicer:
    def __init__(self, retrieval_names: frozenset[str]) -> None:
        self.names = retrieval_names
        self.errored = False
        self._calls = 0
        self._sequence = 0  # the client's next sequence_number
        self._next_output = 0  # the client's next output_index
        self._index: dict[int, int | None] = {}  # this call's output index -> the client's (None: held)
        self._items: dict[int, dict[str, Any]] = {}  # this call's output items (from output_item.done)
        self._forwarded: list[dict[str, Any]] = []
        self._response: dict[str, Any] = {}  # this call's final response object
        self._usage: dict[str, Any] = {}
        self._total: dict[str, Any] = {}
        self._terminal = "response.completed"
        self._complete = False
        self._in_call = False
        self._first_id: str | None = None

    def _begin_call(self) -> None:
        self._calls += 1
        self._in_call = True
        self._index, self._items, self._response, self._usage, self._complete = {}, {}, {}, {}, False

    def feed(self, event: SseEvent) -> list[bytes]:
        if not event.data:
            return [event.raw]
        data = event.json()
        if not isinstance(data, dict):
            return [event.raw]
        kind = data.get("type", event.name)
        if kind in ("response.created", "response.in_progress", "response.queued"):
            if not self._in_call:
                self._begin_call()
            if self._first_id is None:
                self._first_id = (data.get("response") or {}).get("id")
            return self._forward(event, data) if self._calls == 1 else []
        if not self._in_call:
            self._begin_call()
        if kind in _TERMINAL:
            self._terminal = kind
            self._response = dict(data.get("response") or {})
            self._usage = dict(self._response.get("usage") or {})
            self._complete = True
            return []
        if kind in ("error", "response.failed"):
            self.errored = True
            return self._forward(event, data)
        index = data.get("output_index")
        if not isinstance(index, int):
            return self._forward(event, data)
        if kind == "response.output_item.added" and index not in self._index:
            item = data.get("item")
            if _is_retrieval(item, self.names):
                self._index[index] = None
            else:
                self._index[index] = self._next_output
                self._next_output += 1
        out = self._index.get(index, index)
        if kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            self._items[index] = copy.deepcopy(data["item"])
            if out is not None:
                self._forwarded.append(data["item"])
        if out is None:
            return []
        return self._forward(event, data, output_index=out)

    def _forward(self, event: SseEvent, data: dict[str, Any], output_index: int | None = None) -> list[bytes]:
        sequence = self._sequence
        self._sequence += 1
        same_index = output_index is None or output_index == data.get("output_index")
        if data.get("sequence_number") == sequence and same_index:
            return [event.raw]
        data = {**data, "sequence_number": sequence}
        if output_index is not None:
            data["output_index"] = output_index
        return [encode_event(data, event.name)]

    def call_complete(self) -> bool:
        return self._complete

    def end_call(self) -> CallOutcome:
        self._in_call = False
        add_usage(self._total, self._usage)
        items = [self._items[i] for i in sorted(self._items)] or [
            i for i in self._response.get("output") or [] if isinstance(i, dict)
        ]
        return CallOutcome(
            output=items,
            calls=_calls(items),
            stop=self._response.get("status"),
            usage=dict(self._usage),
            response_id=self._response.get("id"),
        )

    def finish(self, stop: str | None = None) -> list[bytes]:
        response = dict(self._response)
        if self._first_id is not None:
            response["id"] = self._first_id  # the SDKs require one id across the lifecycle events
        response["output"] = list(self._forwarded)
        if self._total:
            response["usage"] = self._total
        if stop:
            response["status"] = stop
        data = {"type": self._terminal, "response": response, "sequence_number": self._sequence}
        self._sequence += 1
        return [encode_event(data, self._terminal)]

    def ping(self) -> bytes | None:
        return COMMENT_PING

    def error(self, code: str, message: str) -> bytes:
        event = stream_error_event(code, message, self._sequence)
        self._sequence += 1
        return event

    def client_output(self) -> Any:
        return list(self._forwarded)
