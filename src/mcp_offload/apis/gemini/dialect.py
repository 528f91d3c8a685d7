"""Gemini, response side: read an answer's function calls, write the follow-up request, merge answers, and splice
`streamGenerateContent?alt=sse` streams.

An answer is a `GenerateContentResponse`: `candidates[0].content.parts` (text, thought, `functionCall` parts, each
maybe with a `thoughtSignature`), `candidates[0].finishReason`, `usageMetadata`, `modelVersion`, `responseId`. The
follow-up request sends the model's parts back exactly as they came (every `thoughtSignature` byte for byte: Gemini
refuses a function call turn whose signature is missing or altered), then one user content of `functionResponse`
parts (`{"id"?, "name", "response": {"output": …}}`, `{"error": …}` for a failed call); the last follow-up sets
`toolConfig.functionCallingConfig.mode` "NONE".

Stream splice. Each event is a whole `GenerateContentResponse` chunk with the call's running `usageMetadata`; the
last one of a call carries `finishReason`. A chunk without retrieval calls, from the first call, goes out byte for
byte; a retrieval `functionCall` part is taken out of its chunk (a chunk left without parts is not sent). The
chunk with `finishReason` is held: its other parts go out when the turn goes on, and `finish` writes the last chunk
once, with the last call's finish reason, every call's usage added up and the first call's `responseId`. Chunks of
follow-up calls carry the first call's `responseId` and the usage of the calls before added to theirs. Gemini
streams have no keep-alive event, and the SDKs read an SSE comment as data, so none is sent while the gateway runs
retrieval calls (they are local reads).
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
    arguments_object,
    replayed_rounds,
    with_appended,
)
from mcp_offload.apis.gemini.errors import stream_error_event
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.sse import SseEvent, encode_event
from mcp_offload.apis.usage import UsageFigures, add_usage, as_int, usage_of

FINAL_CONFIG = {"mode": "NONE"}


def _candidate(response: dict[str, Any]) -> dict[str, Any]:
    candidates = response.get("candidates")
    first = candidates[0] if isinstance(candidates, list) and candidates else None
    return first if isinstance(first, dict) else {}


def _parts(candidate: dict[str, Any]) -> list[dict[str, Any]]:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _calls(parts: list[dict[str, Any]]) -> list[ModelToolCall]:
    calls = []
    for part in parts:
        call = part.get("functionCall")
        if isinstance(call, dict):
            call_id = call.get("id")
            calls.append(
                ModelToolCall(
                    id=call_id if isinstance(call_id, str) else "",
                    name=str(call.get("name", "")),
                    arguments=call.get("args"),
                )
            )
    return calls


def _is_retrieval(part: Any, names: frozenset[str]) -> bool:
    call = part.get("functionCall") if isinstance(part, dict) else None
    return isinstance(call, dict) and call.get("name") in names


def function_response(answer: Answer) -> dict[str, Any]:
    """The `functionResponse` part answering a retrieval call (with the call's `id` when it had one)."""
    response: dict[str, Any] = {"name": answer.call.name}
    if answer.call.id:
        response = {"id": answer.call.id, **response}
    response["response"] = {"error" if answer.is_error else "output": answer.text}
    return {"functionResponse": response}


def usage_metadata(response: dict[str, Any]) -> dict[str, Any]:
    found = response.get("usageMetadata")
    return dict(found) if isinstance(found, dict) else {}


class GeminiDialect:
    api: ApiName = "gemini"
    end_stop = "STOP"

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome:
        candidate = _candidate(response)
        parts = _parts(candidate)
        return CallOutcome(
            output=parts,
            calls=_calls(parts),
            stop=candidate.get("finishReason"),
            usage=usage_metadata(response),
            response_id=response.get("responseId"),
        )

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        body = with_appended(request, "contents", self.upstream_messages(rounds, None))
        if final:
            config = request.get("toolConfig")
            body["toolConfig"] = {**(config if isinstance(config, dict) else {}), "functionCallingConfig": FINAL_CONFIG}
        return body

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]:
        return replayed_rounds(
            rounds,
            last,
            lambda said: [{"role": "model", "parts": said.output}],
            lambda answers: [{"role": "user", "parts": [function_response(a) for a in answers]}],
        )

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        for a in answers:
            call = {"id": a.call.id, "name": a.call.name} if a.call.id else {"name": a.call.name}
            parts.append({"functionCall": {**call, "args": arguments_object(a.call.arguments)}})
        return [{"role": "model", "parts": parts}, {"role": "user", "parts": list(map(function_response, answers))}]

    def answer_text(self, response: dict[str, Any]) -> str:
        return "".join(p["text"] for p in _parts(_candidate(response)) if isinstance(p.get("text"), str))

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        parts = _parts(_candidate(response))
        if not parts or any(_is_retrieval(p, retrieval_names) for p in parts):
            return None
        said = {"role": "model", "parts": parts}
        return FinalAnswer(client_copy=said, messages=[said])

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        parts = [p for p in outcome.output if not _is_retrieval(p, retrieval_names)]
        return CallOutcome(parts, _calls(parts), outcome.stop, outcome.usage, outcome.response_id)

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        return _parts(_candidate(merged))

    def client_message(self, client_output: Any) -> dict[str, Any]:
        return {"role": "model", "parts": list(client_output)}

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any:
        merged = dict(responses[0])
        parts: list[dict[str, Any]] = []
        usage: dict[str, Any] = {}
        for response in responses:
            parts.extend(p for p in _parts(_candidate(response)) if not _is_retrieval(p, retrieval_names))
            add_usage(usage, usage_metadata(response))
        candidate = dict(_candidate(responses[-1]))
        content = candidate.get("content")
        candidate["content"] = {**(content if isinstance(content, dict) else {"role": "model"}), "parts": parts}
        if stop:
            candidate["finishReason"] = stop
        merged["candidates"] = [candidate]
        if usage:
            merged["usageMetadata"] = usage
        return merged

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> GeminiSplicer:
        return GeminiSplicer(retrieval_names)  # the usage is in every chunk: always there

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        if not event.data:
            return False
        data = event.json()
        if not isinstance(data, dict):
            return False
        if "error" in data:
            return True
        found = data.get("usageMetadata")
        if isinstance(found, dict):  # each chunk's figures are the call's running totals
            usage.clear()
            usage.update(found)
        return bool(_candidate(data).get("finishReason"))

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        return usage_of(response, "usageMetadata")

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        return UsageFigures(
            input_tokens=as_int(usage.get("promptTokenCount")),  # includes the cached tokens
            output_tokens=as_int(usage.get("candidatesTokenCount")) + as_int(usage.get("thoughtsTokenCount")),
            cache_read_tokens=as_int(usage.get("cachedContentTokenCount")),
        )


class GeminiSplicer:
    def __init__(self, retrieval_names: frozenset[str]) -> None:
        self.names = retrieval_names
        self.errored = False
        self._calls = 0
        self._in_call = False
        self._first_id: str | None = None
        self._parts: list[dict[str, Any]] = []  # this call's parts, as they came
        self._usage: dict[str, Any] = {}  # this call's running usage
        self._total: dict[str, Any] = {}  # the finished calls' usage
        self._stop: str | None = None
        self._complete = False
        self._changed = False  # something was taken out or renumbered: the last chunk is rewritten too
        self._terminal: dict[str, Any] = {}  # the held chunk with finishReason
        self._terminal_raw = b""
        self._pending: list[dict[str, Any]] = []  # its parts still to send
        self._forwarded: list[dict[str, Any]] = []

    def _begin_call(self) -> list[bytes]:
        out = self._flush_pending()
        self._calls += 1
        self._in_call = True
        self._parts, self._usage, self._stop, self._complete = [], {}, None, False
        return out

    def _flush_pending(self) -> list[bytes]:
        """The held last chunk's parts of the previous call, sent when the turn goes on."""
        if not self._pending:
            return []
        chunk = self._chunk(self._terminal, self._pending, usage=self._total, finish=None)
        self._forwarded.extend(self._pending)
        self._pending = []
        return [encode_event(chunk)]

    def _chunk(
        self, data: dict[str, Any], parts: list[dict[str, Any]], *, usage: dict[str, Any], finish: str | None
    ) -> dict[str, Any]:
        candidate = dict(_candidate(data))
        content = candidate.get("content")
        candidate["content"] = {**(content if isinstance(content, dict) else {"role": "model"}), "parts": parts}
        candidate.pop("finishReason", None)
        if finish is not None:
            candidate["finishReason"] = finish
        chunk = {**data, "candidates": [candidate]}
        if usage:
            chunk["usageMetadata"] = usage
        if self._first_id is not None:
            chunk["responseId"] = self._first_id
        return chunk

    def feed(self, event: SseEvent) -> list[bytes]:
        if not event.data:
            return [event.raw]
        data = event.json()
        if not isinstance(data, dict):
            return [event.raw]
        if "error" in data:
            self.errored = True
            return [event.raw]
        out = [] if self._in_call else self._begin_call()
        if self._first_id is None and isinstance(data.get("responseId"), str):
            self._first_id = data["responseId"]
        usage = data.get("usageMetadata")
        if isinstance(usage, dict):
            self._usage = dict(usage)
        candidate = _candidate(data)
        parts = _parts(candidate)
        self._parts.extend(copy.deepcopy(parts))
        kept = [p for p in parts if not _is_retrieval(p, self.names)]
        if len(kept) < len(parts):
            self._changed = True
        if candidate.get("finishReason"):
            self._stop = candidate["finishReason"]
            self._complete = True
            self._terminal, self._terminal_raw, self._pending = data, event.raw, kept
            return out
        if self._calls == 1 and len(kept) == len(parts):
            self._forwarded.extend(kept)
            return [*out, event.raw]
        if not kept:
            return out
        self._changed = True
        self._forwarded.extend(kept)
        running = add_usage(copy.deepcopy(self._total), self._usage)
        return [*out, encode_event(self._chunk(data, kept, usage=running, finish=None))]

    def call_complete(self) -> bool:
        return self._complete

    def end_call(self) -> CallOutcome:
        self._in_call = False
        add_usage(self._total, self._usage)
        parts = list(self._parts)
        return CallOutcome(output=parts, calls=_calls(parts), stop=self._stop, usage=dict(self._usage))

    def finish(self, stop: str | None = None) -> list[bytes]:
        parts, self._pending = self._pending, []
        self._forwarded.extend(parts)
        if self._calls == 1 and stop is None and not self._changed and self._terminal_raw:
            return [self._terminal_raw]
        return [encode_event(self._chunk(self._terminal, parts, usage=self._total, finish=stop or self._stop))]

    def ping(self) -> bytes | None:
        return None

    def error(self, code: str, message: str) -> bytes:
        return stream_error_event(f"{message} ({code})")

    def client_output(self) -> Any:
        return list(self._forwarded)
