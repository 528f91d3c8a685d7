"""What the retrieval loop needs from each API, response side: the `Dialect` protocol and the shapes it speaks in
(usage objects and their figures: usage.py).

A dialect reads one upstream answer into a `CallOutcome` (the assistant output to send back, its tool calls, why it
stopped, its usage), writes the follow-up request (the original request plus each `Round`: the assistant output and
the retrieval answers), merges several answers into the one the client sees, and builds a `Splicer` for streams.

A `Splicer` is fed the upstream's SSE events call after call and returns the bytes to forward right away: everything
except the retrieval tool calls and the terminal events, renumbered so the client sees one well-formed stream.
`end_call` closes one upstream call; `finish` writes the held terminal events once, with the usage of every call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.sse import SseEvent
from mcp_offload.apis.usage import UsageFigures


@dataclass(slots=True)
class ModelToolCall:
    id: str
    name: str
    arguments: Any  # the parsed JSON arguments; the raw text when it is not JSON


@dataclass(slots=True)
class Answer:
    """A retrieval tool call and what the gateway answered it with."""

    call: ModelToolCall
    text: str
    is_error: bool


@dataclass(slots=True)
class CallOutcome:
    """One upstream call, as the next request and the client's answer need it."""

    output: Any  # anthropic: content blocks; openai_chat: the assistant message; responses: output items
    calls: list[ModelToolCall]
    stop: str | None  # stop_reason / finish_reason / status
    usage: dict[str, Any]
    response_id: str | None = None


@dataclass(slots=True)
class Round:
    """One trip of the loop: what the model said and the answers to its retrieval calls."""

    outcome: CallOutcome
    answers: list[Answer] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """A loop's last answer, whole: `client_copy`, the answer as the client sends it back on its next turn (one
    assistant message; Responses: the list of output items), and `messages`, the same answer in request form as it
    goes upstream when the loop's expansion is restored."""

    client_copy: Any
    messages: list[dict[str, Any]]


class Splicer(Protocol):
    errored: bool  # the upstream sent its own error event (forwarded as is): the stream is over

    def feed(self, event: SseEvent) -> list[bytes]: ...

    def call_complete(self) -> bool:
        """The current call's terminal event arrived (else the stream was cut)."""
        ...

    def end_call(self) -> CallOutcome: ...

    def finish(self, stop: str | None = None) -> list[bytes]: ...

    def ping(self) -> bytes | None:
        """A keep-alive for now, or None when the stream is not at a point where one may be sent."""
        ...

    def error(self, code: str, message: str) -> bytes: ...

    def client_output(self) -> Any:
        """What the client received, as the dialect's output shape (for the expansion record)."""
        ...


class Dialect(Protocol):
    api: ApiName
    end_stop: str  # the stop reason of an answer that ended normally (when the loop ends it for the model)

    def outcome(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> CallOutcome: ...

    def follow_up(self, request: dict[str, Any], rounds: list[Round], *, final: bool) -> dict[str, Any]: ...

    def merged(self, responses: list[dict[str, Any]], retrieval_names: frozenset[str], stop: str | None) -> Any: ...

    def splicer(self, retrieval_names: frozenset[str], *, client_usage: bool = True) -> Splicer: ...

    def without_retrieval(self, outcome: CallOutcome, retrieval_names: frozenset[str]) -> CallOutcome:
        """The outcome with its retrieval calls taken out (a last call that ignored tool_choice "none")."""
        ...

    def client_output_of(self, merged: dict[str, Any]) -> Any:
        """What the client received in a merged JSON answer, in the shape `client_message` takes."""
        ...

    def client_message(self, client_output: Any) -> Any:
        """The client's copy of the response in request form (a message; Responses: a list of items)."""
        ...

    def upstream_messages(self, rounds: list[Round], last: CallOutcome | None) -> list[dict[str, Any]]: ...

    def round_messages(self, text: str, answers: Sequence[Answer]) -> list[dict[str, Any]]:
        """One round in request form for a loop that holds no upstream output (the LiteLLM guardrail): the model's
        `text` and the answered calls (`arguments` as the client's library gave them), then their answers."""
        ...

    def answer_text(self, response: dict[str, Any]) -> str:
        """The text the model wrote beside its tool calls in a whole answer (the LiteLLM guardrail's round)."""
        ...

    def final_answer(self, response: dict[str, Any], retrieval_names: frozenset[str]) -> FinalAnswer | None:
        """A whole answer as the client holds it and as it goes upstream (the LiteLLM guardrail's expansion record);
        None when there is none to record: no output, or a call to a retrieval tool still in it."""
        ...

    def usage_of_event(self, event: SseEvent, usage: dict[str, Any]) -> bool:
        """Update `usage` from one streamed event (for streams relayed without a splice); True at the terminal."""
        ...

    def usage_of(self, response: dict[str, Any]) -> dict[str, Any]:
        """A copy of a whole answer's usage object ({} when it has none)."""
        ...

    def figures(self, usage: dict[str, Any]) -> UsageFigures:
        """The usage object as one normalised figure set (every prompt token in `input_tokens`, the cached ones
        also in `cache_read_tokens`, whatever the API's own counters): nothing downstream reads vendor keys."""
        ...


def arguments_text(arguments: Any) -> str:
    """A call's arguments as JSON text (as given when they are text already)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})


def arguments_object(arguments: Any) -> Any:
    """A call's arguments as a JSON value ({} for text that is not JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return {}
    return arguments if arguments is not None else {}


def parsed_arguments(raw: Any) -> Any:
    """A call's arguments as the model sent them, as JSON text (whole, or accumulated from a stream's deltas),
    parsed: {} for blank text, the text itself when it is not JSON; a value that is not text as it is."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        return raw


def with_appended(request: dict[str, Any], key: str, added: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of `request` whose conversation (its list under `key`) ends with `added`: the follow-up request."""
    return {**request, key: list(request.get(key) or []) + added}


def replayed_rounds(
    rounds: list[Round],
    last: CallOutcome | None,
    said: Callable[[CallOutcome], list[dict[str, Any]]],
    answered: Callable[[list[Answer]], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """What the loop added to the conversation, in request form: each round's output (`said`) followed by its answers
    (`answered`), then the `last` output if given. The dialects differ only in how they wrap the two."""
    messages: list[dict[str, Any]] = []
    for trip in rounds:
        messages.extend(said(trip.outcome))
        messages.extend(answered(trip.answers))
    if last is not None:
        messages.extend(said(last))
    return messages
