"""What the stream splicers of APIs whose answers are numbered content blocks (Anthropic Messages, Converse) keep
alike (`BlockSplicer`, a base the API's splicer takes): each call's blocks accumulated by their index (`_blocks`, a
tool call's input JSON text in `_json`), the client's index of each (`_index`: None for a held retrieval call; the
next forwarded block gets `_next_index`), the blocks the client received across calls (`_forwarded`), and each
call's usage (`_usage`) added into the turn's (`_total`) when the call ends (`end_call`). Which events carry what is
the API's splicer's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.apis.dialect import CallOutcome, ModelToolCall
from mcp_offload.apis.usage import add_usage

Blocks = list[dict[str, Any]]


class BlockSplicer:
    def __init__(self, retrieval_names: frozenset[str], tool_calls: Callable[[Blocks], list[ModelToolCall]]) -> None:
        self.names = retrieval_names
        self.errored = False
        self._tool_calls = tool_calls  # the API's reading of a call's blocks into its tool calls
        self._calls = 0  # upstream calls begun
        self._next_index = 0  # the client's next content block index
        self._index: dict[int, int | None] = {}  # this call's block index -> the client's (None: held)
        self._blocks: dict[int, dict[str, Any]] = {}  # this call's blocks, accumulated
        self._json: dict[int, str] = {}
        self._forwarded: Blocks = []  # what the client received, across calls
        self._usage: dict[str, Any] = {}  # this call's
        self._total: dict[str, Any] = {}
        self._stop: str | None = None
        self._complete = False

    def _begin_call(self) -> None:
        self._calls += 1
        self._index, self._blocks, self._json = {}, {}, {}
        self._usage, self._stop, self._complete = {}, None, False

    def call_complete(self) -> bool:
        return self._complete

    def end_call(self) -> CallOutcome:
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        add_usage(self._total, self._usage)
        return CallOutcome(output=blocks, calls=self._tool_calls(blocks), stop=self._stop, usage=dict(self._usage))

    def client_output(self) -> Any:
        return list(self._forwarded)
