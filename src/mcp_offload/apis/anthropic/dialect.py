"""Anthropic Messages, response side: read an answer's tool calls, write the follow-up request, merge answers, and
splice streams.

Stream splice: `message_start` of the first call is forwarded, later calls' are swallowed (their usage is kept).
Content blocks are forwarded as they arrive with their `index` renumbered to run on from the blocks already sent;
a `tool_use` block of a retrieval tool is held back whole. `message_delta` and `message_stop` are held and written
once by `finish`, with the stop reason of the last call and every call's usage added up (the SDK treats the
message_delta usage as the cumulative figure). `ping` events pass through; the gateway sends its own while it runs
retrieval calls and waits for the follow-up.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.anthropic.breakpoint import with_end_breakpoint
from mcp_offload.apis.anthropic.errors import stream_error_event
from mcp_offload.apis.block_splicer import BlockSplicer
from mcp_offload.apis.dialect import (
    Answer,
    CallOutcome,
    FinalAnswer,
    ModelToolCall,
    Round,
    arguments_object,
    parsed_arguments,
    replayed_rounds,
    with_appended,
)
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.sse import SseEvent, encode_event
from mcp_offload.apis.usage import UsageFigures, add_usage, cache_counted_figures, usage_of

PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def _tool_calls(blocks: list[dict[str, Any]]) -> list[ModelToolCall]:
    return [
        ModelToolCall(id=str(b.get("id", "")), name=str(b.get("name", "")), arguments=b.get("input"))
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def _is_retrieval(block: Any, names: frozenset[str]) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") in names


def tool_result(answer: Answer) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": answer.call.id, "content": answer.text}
    if answer.is_error:
        block["is_error"] = True
    return block


class AnthropicDialect:
    api: ApiName = "anthropic"
    end_stop = "end_turn"

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome:
        content = response.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        return CallOutcome(
            output=blocks,
            calls=_tool_calls(blocks),
            stop=response.get("stop_reason"),
            usage=dict(response.get("usage") or {}),
            response_id=response.get("id"),
        )

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        appended = self.upstream_messages(rounds, None)
        body = with_appended(request, "messages", appended)
        if final:
            body["tool_choice"] = {"type": "none"}  # keeps the tools array (and its cache) as it is
        return with_end_breakpoint(body, len(appended))  # the next turn reads what the loop added from the cache

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]:
        return replayed_rounds(
            rounds,
            last,
            lambda said: [{"role": "assistant", "content": said.output}],
            lambda answers: [{"role": "user", "content": [tool_result(a) for a in answers]}],
        )

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks += [
            {"type": "tool_use", "id": a.call.id, "name": a.call.name, "input": arguments_object(a.call.arguments)}
            for a in answers
        ]
        return [{"role": "assistant", "content": blocks}, {"role": "user", "content": list(map(tool_result, answers))}]

    def answer_text(self, response: dict[str, Any]) -> str:
        content = response.get("content")
        blocks = content if isinstance(content, list) else []
        return "".join(str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        content = response.get("content")
        if not isinstance(content, list) or not content:
            return None
        blocks = [b if isinstance(b, dict) else {} for b in content]
        if any(_is_retrieval(b, retrieval_names) for b in blocks):
            return None
        said = {"role": "assistant", "content": blocks}
        return FinalAnswer(client_copy=said, messages=[said])

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        blocks = [b for b in outcome.output if not _is_retrieval(b, retrieval_names)]
        return CallOutcome(blocks, _tool_calls(blocks), outcome.stop, outcome.usage, outcome.response_id)

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        return merged.get("content")

    def client_message(self, client_output: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": client_output}

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any:
        merged = dict(responses[0])
        content: list[Any] = []
        usage: dict[str, Any] = {}
        for response in responses:
            content.extend(b for b in response.get("content") or [] if not _is_retrieval(b, retrieval_names))
            add_usage(usage, response.get("usage"))
        last = responses[-1]
        merged["content"] = content
        merged["stop_reason"] = stop or last.get("stop_reason")
        merged["stop_sequence"] = last.get("stop_sequence")
        merged["usage"] = usage
        return merged

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> AnthropicSplicer:
        return AnthropicSplicer(retrieval_names)  # the usage is part of the terminal event: always there

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        if event.name in ("message_stop", "error"):
            return True
        if event.name in ("message_start", "message_delta"):
            data = event.json()
            found = (data.get("message") or {}).get("usage") if event.name == "message_start" else data.get("usage")
            if isinstance(found, dict):
                usage.update({k: v for k, v in found.items() if v is not None})
        return False

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        return usage_of(response)

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        return cache_counted_figures(
            usage,
            input_key="input_tokens",
            output_key="output_tokens",
            read_key="cache_read_input_tokens",
            write_key="cache_creation_input_tokens",
        )


class AnthropicSplicer(BlockSplicer):
    def __init__(self, retrieval_names: frozenset[str]) -> None:
        super().__init__(retrieval_names, _tool_calls)  # a call's usage: message_start's, then message_delta's
        self._stop_sequence: str | None = None
        self._started = False  # a message_start went to the client

    def feed(self, event: SseEvent) -> list[bytes]:
        name = event.name
        if name in ("ping", None):
            return [event.raw] if self._started or name is None else []
        if name == "error":
            self.errored = True
            return [event.raw]
        data = event.json()
        if name == "message_start":
            self._begin_call()
            self._usage = dict((data.get("message") or {}).get("usage") or {})
            if self._calls == 1:
                self._started = True
                return [event.raw]
            return []
        if name == "content_block_start":
            return self._block_start(event, data)
        if name in ("content_block_delta", "content_block_stop"):
            return self._block_event(event, data, stop=name == "content_block_stop")
        if name == "message_delta":
            delta = data.get("delta") or {}
            self._stop = delta.get("stop_reason", self._stop)
            self._stop_sequence = delta.get("stop_sequence")
            usage = data.get("usage") or {}
            self._usage.update({k: v for k, v in usage.items() if v is not None})
            return []
        if name == "message_stop":
            self._complete = True
            return []
        return [event.raw]  # an event type this gateway does not know: the client's SDK may

    def _begin_call(self) -> None:
        super()._begin_call()
        self._stop_sequence = None

    def _block_start(self, event: SseEvent, data: dict[str, Any]) -> list[bytes]:
        index = data.get("index")
        block = data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return [event.raw]
        self._blocks[index] = copy.deepcopy(block)
        if _is_retrieval(block, self.names):
            self._index[index] = None
            return []
        out = self._next_index
        self._next_index += 1
        self._index[index] = out
        if out == index:
            return [event.raw]
        return [encode_event({**data, "index": out}, "content_block_start")]

    def _block_event(self, event: SseEvent, data: dict[str, Any], *, stop: bool) -> list[bytes]:
        index = data.get("index")
        if not isinstance(index, int) or index not in self._index:
            return [event.raw]
        block = self._blocks[index]
        if stop:
            self._close_block(index, block)
        else:
            self._apply_delta(index, block, data.get("delta") or {})
        out = self._index[index]
        if out is None:
            return []
        if stop:
            self._forwarded.append(block)
        if out == index:
            return [event.raw]
        return [encode_event({**data, "index": out}, event.name)]

    def _apply_delta(self, index: int, block: dict[str, Any], delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + delta.get("partial_json", "")
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def _close_block(self, index: int, block: dict[str, Any]) -> None:
        if index in self._json:
            block["input"] = parsed_arguments(self._json.pop(index))

    def finish(self, stop: str | None = None) -> list[bytes]:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop or self._stop, "stop_sequence": self._stop_sequence},
            "usage": self._total,
        }
        return [encode_event(delta, "message_delta"), encode_event({"type": "message_stop"}, "message_stop")]

    def ping(self) -> bytes | None:
        return PING if self._started else None

    def error(self, code: str, message: str) -> bytes:
        return stream_error_event(code, message)
