"""Token accounting for message lists: what each message costs (cached by identity), usage against a context
window, and the escalation policy.

Counting uses the server's tokenizer (tiktoken, offline; large texts sampled like stored outputs) unless the caller
supplies `count_tokens(text) -> int` for another model. A message costs its text (plain text, tool call arguments,
tool result text) plus `MESSAGE_OVERHEAD` tokens, and `IMAGE_TOKENS` per image: an estimate, close to what the APIs
bill, good enough to decide when to compact.

The policy (`compact(..., context_window=W, trigger=0.8)`): nothing happens while the list uses at most `trigger × W`
tokens. Above that, steps of increasing strength run until it fits: (1) offload tool results over the threshold,
oldest first; (2) offload any tool result larger than a reference, oldest first; (3) move whole older turns into one
stored transcript, replaced by its reference + preview, or by a summary + its handle when a `summarize` callback is
given. Without `context_window` only step (1) runs, on every call, inside the boundary.

`MessageLedger` remembers, per message object (by identity, bounded LRU, holding a reference so an id is never
reused while remembered), its plain-dict form, its `MessageView`, its token count and the threshold it was already
compacted at: a call over a long history only reads, counts and compacts the messages it has not seen.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from mcp_offload.compact.formats import Message, MessageFormat, MessageView

MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1_000
LEDGER_SIZE = 20_000

CountTokens = Callable[[str], int]


@dataclass(slots=True)
class Entry:
    """What the ledger knows about one message object."""

    source: object  # the object the caller passed (kept alive so its id stays unique)
    out: Message  # the plain dict returned for it
    view: MessageView
    tokens: int | None = None
    settled_at: int | None = None  # compacted at this threshold already: nothing over it is left inline
    compacted: Entry | None = None  # the compacted message returned for this one (passing it again stores nothing)

    def latest(self) -> Entry:
        entry = self
        while entry.compacted is not None:
            entry = entry.compacted
        return entry


@dataclass(slots=True)
class MessageLedger:
    count_text: CountTokens
    size: int = LEDGER_SIZE
    _entries: OrderedDict[tuple[int, str], Entry] = field(default_factory=OrderedDict)

    def entry(self, fmt: MessageFormat, message: object, index: int) -> Entry:
        """The entry for `message` (read and validated only the first time it is seen)."""
        key = (id(message), fmt.name)
        found = self._entries.get(key)
        if found is not None and found.source is message:
            self._entries.move_to_end(key)
            return found
        out = fmt.to_dict(message, index)
        entry = Entry(source=message, out=out, view=fmt.view(out, index))
        self.remember(fmt, entry)
        return entry

    def remember(self, fmt: MessageFormat, entry: Entry) -> None:
        self._entries[(id(entry.source), fmt.name)] = entry
        self._entries.move_to_end((id(entry.source), fmt.name))
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def tokens(self, entry: Entry) -> int:
        if entry.tokens is None:
            entry.tokens = message_tokens(entry.view, self.count_text)
        return entry.tokens


def message_tokens(view: MessageView, count_text: CountTokens) -> int:
    return count_text(view.text) + MESSAGE_OVERHEAD + IMAGE_TOKENS * view.images


class Usage(TypedDict):
    """`Compactor.usage()`'s answer: tokens counted, messages, and the share of the window when one is given."""

    tokens: int
    messages: int
    context_window: int | None
    share: float | None


def usage_report(tokens: int, messages: int, context_window: int | None) -> Usage:
    return {
        "tokens": tokens,
        "messages": messages,
        "context_window": context_window,
        "share": round(tokens / context_window, 4) if context_window else None,
    }


@dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """When to compact and when to stop: over `trigger × context_window` tokens, until under it again."""

    context_window: int | None
    trigger: float = 0.8

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window <= 0:
            raise ValueError("context_window must be a positive number of tokens")
        if not 0 < self.trigger <= 1:
            raise ValueError("trigger must be in (0, 1]: the share of the context window that starts compaction")

    @property
    def limit(self) -> int | None:
        return None if self.context_window is None else int(self.context_window * self.trigger)

    def fits(self, tokens: int) -> bool:
        return self.limit is None or tokens <= self.limit
