"""Bedrock Converse, response side: read an answer's tool calls, write the follow-up request, merge answers, and
splice streams.

An answer is `{"output": {"message": {"role": "assistant", "content": [...]}}, "stopReason", "usage": {"inputTokens",
"outputTokens", "totalTokens", "cacheReadInputTokens", "cacheWriteInputTokens"}, "metrics": {"latencyMs"}}`;
`inputTokens` counts only what was neither read from nor written to the cache.

Stream splice (ConverseStream events, one per event-stream frame; the provider's framing turns them into events
named by their type): `messageStart` of the first call is forwarded, later calls' are swallowed. Blocks are forwarded
as they arrive with `contentBlockIndex` renumbered to run on from the blocks already sent (a text block has no start
event: its first delta opens it); a `toolUse` block of a retrieval tool (its `contentBlockStart` names it) is held
back whole. `messageStop` and `metadata` are held and written once by `finish`, with the stop reason of the last call
and every call's usage added up. An exception event (`throttlingException`, `modelStreamErrorException`, …) ends the
stream and is forwarded as it is. Converse has no keep-alive event: none is sent while the gateway runs retrieval
calls. The last call of a loop cannot be told to call no tools (Converse's `toolChoice` has no "none"); its retrieval
calls, if any, are dropped and the turn ends (the loop's rule).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.block_splicer import BlockSplicer
from mcp_offload.apis.converse.cache_points import with_end_cache_point
from mcp_offload.apis.converse.errors import stream_error_event
from mcp_offload.apis.converse.messages import block_kind
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
from mcp_offload.apis.usage import UsageFigures, add_usage, as_int, cache_counted_figures, usage_of


def _tool_calls(blocks: list[dict[str, Any]]) -> list[ModelToolCall]:
    return [
        ModelToolCall(
            id=str(b["toolUse"].get("toolUseId", "")),
            name=str(b["toolUse"].get("name", "")),
            arguments=b["toolUse"].get("input"),
        )
        for b in blocks
        if block_kind(b) == "toolUse" and isinstance(b["toolUse"], dict)
    ]


def _is_retrieval(block: Any, names: frozenset[str]) -> bool:
    return (
        block_kind(block) == "toolUse" and isinstance(block["toolUse"], dict) and block["toolUse"].get("name") in names
    )


def tool_result(answer: Answer) -> dict[str, Any]:
    result: dict[str, Any] = {"toolUseId": answer.call.id, "content": [{"text": answer.text}]}
    if answer.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _content(response: dict[str, Any]) -> list[dict[str, Any]]:
    message = (response.get("output") or {}).get("message") or {}
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def is_exception(name: str | None) -> bool:
    return name is not None and name.endswith("Exception")


class ConverseDialect:
    api: ApiName = "converse"
    end_stop = "end_turn"

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome:
        blocks = _content(response)
        return CallOutcome(blocks, _tool_calls(blocks), response.get("stopReason"), dict(response.get("usage") or {}))

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]:
        appended = self.upstream_messages(rounds, None)
        return with_end_cache_point(with_appended(request, "messages", appended), len(appended))

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]:
        return replayed_rounds(
            rounds,
            last,
            lambda said: [{"role": "assistant", "content": said.output}],
            lambda answers: [{"role": "user", "content": [tool_result(a) for a in answers]}],
        )

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"text": text}] if text else []
        blocks += [
            {"toolUse": {"toolUseId": a.call.id, "name": a.call.name, "input": arguments_object(a.call.arguments)}}
            for a in answers
        ]
        return [{"role": "assistant", "content": blocks}, {"role": "user", "content": list(map(tool_result, answers))}]

    def answer_text(self, response: dict[str, Any]) -> str:
        return "".join(b["text"] for b in _content(response) if isinstance(b.get("text"), str))

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        blocks = _content(response)
        if not blocks or any(_is_retrieval(b, retrieval_names) for b in blocks):
            return None
        said = {"role": "assistant", "content": blocks}
        return FinalAnswer(client_copy=said, messages=[said])

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        blocks = [b for b in outcome.output if not _is_retrieval(b, retrieval_names)]
        return CallOutcome(blocks, _tool_calls(blocks), outcome.stop, outcome.usage, outcome.response_id)

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        return _content(merged)

    def client_message(self, client_output: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": client_output}

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any:
        merged = dict(responses[0])
        content: list[Any] = []
        usage: dict[str, Any] = {}
        latency = 0
        for response in responses:
            content.extend(b for b in _content(response) if not _is_retrieval(b, retrieval_names))
            add_usage(usage, response.get("usage"))
            latency += as_int((response.get("metrics") or {}).get("latencyMs"))
        merged["output"] = {"message": {"role": "assistant", "content": content}}
        merged["stopReason"] = stop or responses[-1].get("stopReason")
        merged["usage"] = usage
        merged["metrics"] = {**(responses[-1].get("metrics") or {}), "latencyMs": latency}
        return merged

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> ConverseSplicer:
        return ConverseSplicer(retrieval_names)

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        if is_exception(event.name):
            return True
        if event.name == "metadata":
            found = event.json().get("usage")
            if isinstance(found, dict):
                usage.update({k: v for k, v in found.items() if v is not None})
            return True
        return False

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        return usage_of(response)

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        return cache_counted_figures(
            usage,
            input_key="inputTokens",
            output_key="outputTokens",
            read_key="cacheReadInputTokens",
            write_key="cacheWriteInputTokens",
        )


class ConverseSplicer(BlockSplicer):
    def __init__(self, retrieval_names: frozenset[str]) -> None:
        super().__init__(retrieval_names, _tool_calls)
        self._latency = 0

    def feed(self, event: SseEvent) -> list[bytes]:
        name = event.name
        if name is None:
            return [event.raw]
        if is_exception(name):
            self.errored = True
            return [event.raw]
        data = event.json()
        if name == "messageStart":
            self._begin_call()
            return [event.raw] if self._calls == 1 else []
        if name in ("contentBlockStart", "contentBlockDelta", "contentBlockStop"):
            return self._block_event(event, data)
        if name == "messageStop":
            self._stop = data.get("stopReason", self._stop)
            return []
        if name == "metadata":
            self._usage = dict(data.get("usage") or {})
            self._latency += as_int((data.get("metrics") or {}).get("latencyMs"))
            self._complete = True
            return []
        return [event.raw]  # an event this gateway does not know: the client's SDK may

    def _block_event(self, event: SseEvent, data: dict[str, Any]) -> list[bytes]:
        index = data.get("contentBlockIndex")
        if not isinstance(index, int):
            return [event.raw]
        if index not in self._index:
            start = (data.get("start") or {}).get("toolUse") if event.name == "contentBlockStart" else None
            if isinstance(start, dict):
                self._blocks[index] = {"toolUse": {**copy.deepcopy(start), "input": {}}}
            else:
                self._blocks[index] = {}
            held = isinstance(start, dict) and start.get("name") in self.names
            self._index[index] = None if held else self._next_index
            self._next_index += 0 if held else 1
        if event.name == "contentBlockDelta":
            self._apply_delta(index, data.get("delta") or {})
        elif event.name == "contentBlockStop":
            self._close_block(index)
        out = self._index[index]
        if out is None:
            return []
        if event.name == "contentBlockStop":
            self._forwarded.append(self._blocks[index])
        if out == index:
            return [event.raw]
        return [encode_event({**data, "contentBlockIndex": out}, event.name)]

    def _apply_delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks[index]
        if "text" in delta:
            block["text"] = block.get("text", "") + str(delta["text"])
        elif isinstance(delta.get("toolUse"), dict):
            self._json[index] = self._json.get(index, "") + str(delta["toolUse"].get("input", ""))
        elif isinstance(delta.get("reasoningContent"), dict):
            reasoning = block.setdefault("reasoningContent", {})
            part = delta["reasoningContent"]
            if "redactedContent" in part:
                reasoning["redactedContent"] = part["redactedContent"]
            else:
                text_block = reasoning.setdefault("reasoningText", {"text": ""})
                text_block["text"] += str(part.get("text", ""))
                if "signature" in part:
                    text_block["signature"] = part["signature"]

    def _close_block(self, index: int) -> None:
        if index in self._json and "toolUse" in self._blocks[index]:
            self._blocks[index]["toolUse"]["input"] = parsed_arguments(self._json.pop(index))

    def finish(self, stop: str | None = None) -> list[bytes]:
        metadata = {"usage": self._total, "metrics": {"latencyMs": self._latency}}
        return [
            encode_event({"stopReason": stop or self._stop}, "messageStop"),
            encode_event(metadata, "metadata"),
        ]

    def ping(self) -> bytes | None:
        return None

    def error(self, code: str, message: str) -> bytes:
        return stream_error_event(code, message)
