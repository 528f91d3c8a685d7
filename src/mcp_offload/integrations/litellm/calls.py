"""What the guardrail keeps about one LiteLLM call between its hooks, by LiteLLM's call id (`litellm_call_id`, the
same for the request and every agentic follow-up it makes): the session, the client's API, the client's last message
and the rounds the loop added. Bounded: entries older than `TTL_S` or beyond `MAX_CALLS` are dropped, oldest first
(a call whose loop never ran is simply forgotten)."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.message import Message

TTL_S = 15 * 60.0
MAX_CALLS = 10_000


@dataclass(slots=True)
class LoopCall:
    session_key: str
    api: LlmApi  # the client's API (the request's call type)
    previous: Message | None  # the client's last message, as the client sent it (keys the expansion)
    at: float = field(default_factory=time.monotonic)
    rounds: list[list[Message]] = field(default_factory=list)  # by loop depth: what each round added
    rounds_api: LlmApi | None = None  # the API the loop's messages are in (LiteLLM may translate the client's)
    complete: bool = True  # False once a depth was skipped: the rounds are not all the upstream saw

    def add_round(self, depth: int, api: LlmApi, messages: list[Message]) -> None:
        """The round at `depth` (a retried depth replaces what was recorded from it on)."""
        if depth > len(self.rounds):
            self.complete = False
            return
        del self.rounds[depth:]
        self.rounds.append(messages)
        self.rounds_api = api if depth == 0 or self.rounds_api is api else None

    def loop_messages(self) -> list[Message]:
        return [m for added in self.rounds for m in added]


class CallTable:
    def __init__(self, ttl_s: float = TTL_S, max_calls: int = MAX_CALLS) -> None:
        self._calls: OrderedDict[str, LoopCall] = OrderedDict()
        self._ttl_s, self._max_calls = ttl_s, max_calls

    def remember(self, call_id: str, call: LoopCall) -> None:
        self._calls.pop(call_id, None)
        self._calls[call_id] = call
        while self._calls:
            oldest = next(iter(self._calls.values()))
            if len(self._calls) <= self._max_calls and call.at - oldest.at < self._ttl_s:
                break
            self._calls.popitem(last=False)

    def get(self, call_id: str | None) -> LoopCall | None:
        return self._calls.get(call_id) if call_id else None

    def forget(self, call_id: str | None) -> None:
        if call_id:
            self._calls.pop(call_id, None)
