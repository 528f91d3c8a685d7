"""Token accounting for message lists: what each message costs (memoized by content), usage against a context
window, and the order of the compaction steps.

Counting uses the server's tokenizer (tiktoken, offline; large texts sampled like stored outputs) unless the caller
supplies `count_tokens(text) -> int` for another model. A message costs its text (plain text, tool call arguments,
tool result text) plus `MESSAGE_OVERHEAD` tokens, and `IMAGE_TOKENS` per image: an estimate, close to what the APIs
bill, good enough to decide when to compact. The budget is measured here, exactly; the cache-safe core
(cachesafe.rewrite) estimates 4 characters a token only for its own rules (the cost rule's positions).

Every call, window or not, starts with the cache-safe core's pass (the decisions live in the session's
`DecisionRecord`, beside the store: sticky across calls, restarts and instances):

0. every recorded decision is applied, wherever its message now sits and whatever the boundary: tool results (text
   parts by the core, image parts by the compactor through the same record) and transcript notes (step 3), with
   their exact bytes;
1. at first sight, tool result parts of at least `threshold_tokens` inside the boundary that the record has no
   decision for are stored and replaced by their reference (reason "threshold"). `keep-last` is the exception: its
   results were sent inline while they were kept, so leaving the kept messages is a rewrite of the already-sent
   prefix, taken only by the core's cost rule (reason "cost": it must pay at the provider's cache prices for
   `model`, and clear at least what the kept messages hold and `KEEP_LAST_BATCH_TOKENS`: one batch, seldom).

Nothing more happens while the request uses at most `trigger × W` tokens (`compact(..., context_window=W,
trigger=0.8)`). The request is counted whole: the messages, plus the fixed part they share the window with: `system`
(the system prompt when the API takes it beside the messages), `tools` (the caller's tool definitions), the five
retrieval tools (unless `retrieval_tools=False`) and `max_output_tokens` reserved for the answer. Above that, window
pressure: the core offloads, measured exactly here (`Pressure`, reason "pressure", recorded and sticky), in one
batch down to `0.75 × trigger × W` (each rewrite of already-sent messages is a prompt-cache miss from there on, so
it should not recur on the next request):

1. tool results of at least `threshold_tokens` inside the boundary, oldest first;
2. tool results of at least a reference (`preview_tokens`) inside the boundary, oldest first;
3. then, while over `trigger × W`: whole older turns (outside kept messages) into one stored transcript; the note
   that stands for them (reference + preview, or a `summarize` callback's summary + the handle) is the first part
   of the user message that opens the next turn, so user and assistant still alternate. The note is recorded under
   the turns' position and content (`t:<digest>`): later calls put back the very same note (step 0), so the list
   does not flip between transcribed and not.

Only if the request is then still over `W` itself (it would not fit), the last resort, boundaries notwithstanding,
each step until the request is under `trigger × W`:

4. tool results of at least a reference anywhere (kept messages and the current turn too), oldest first (the core's
   pressure rule again, reason "pressure");
5. tool-call arguments larger than a reference, oldest first (the call keeps its id and name; its arguments become
   `{"offloaded_arguments": reference}`, still the shape the API takes);
6. the user's own messages more than twice a reference, oldest first, except the last user turn: each is stored
   whole (one JSON message) and replaced by a user message holding its reference + preview;
7. the last user message the same way, only when nothing else is left to reduce.

Steps 5-7 are the compactor's own (the core rewrites tool results only): not recorded, but deterministic, under
handles derived from the session and the content, so the same input gives the same bytes after a restart.

If the request is still over `W`, `ContextWindowExceeded` is raised (mcp_offload.errors), naming what could not be
reduced: the fixed part by part, and the largest messages left (system messages, assistant text and references are
never reduced). So with a window, `compact` returns a list that fits, or raises: never a silent overflow. Without
`context_window` only steps 0 and 1 run.

`TokenMemo` memoizes, per message content (keyed by the SHA-256 of its canonical JSON, bounded LRU), its
`MessageView` and its token count, so a call over a long history only reads and counts the messages whose content it
has not seen. It holds no decision: an edit in place (a result appended to a message already seen) is new content,
decided like any other.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.message import Message, MessageView

MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1_000
LEDGER_SIZE = 20_000

CountTokens = Callable[[str], int]


@dataclass(slots=True)
class Known:
    """What the memo knows about one message content: its view (validated) and its token count."""

    view: MessageView
    key: bytes  # content_key of the message
    tokens: int | None = None


@dataclass(slots=True)
class TokenMemo:
    """Memo of message views and token counts, by content (not a record of decisions: those are in the session's
    `DecisionRecord`)."""

    count_text: CountTokens
    size: int = LEDGER_SIZE
    _entries: OrderedDict[tuple[str, bytes], Known] = field(default_factory=OrderedDict)

    def known(self, api: LlmApi, message: Message, index: int) -> Known:
        """The view and count of `message`'s content (read and validated only the first time that content is seen;
        raises ValueError naming `index` when it is malformed)."""
        key = (api.name, content_key(message))
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        found = self._entries[key] = Known(api.messages.view(message, index), key[1])
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return found

    def tokens(self, known: Known) -> int:
        if known.tokens is None:
            known.tokens = message_tokens(known.view, self.count_text)
        return known.tokens


def content_key(message: Message) -> bytes:
    """SHA-256 of the message's canonical JSON: equal content, equal key, whatever object carries it (a message
    edited in place, say a result appended to it, is new content)."""
    try:
        data = orjson.dumps(message, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # lone surrogates, values JSON has no type for: the slower encoder takes them all
        data = json.dumps(message, sort_keys=True, default=repr).encode()
    return hashlib.sha256(data).digest()


def message_tokens(view: MessageView, count_text: CountTokens) -> int:
    return count_text(view.text) + MESSAGE_OVERHEAD + IMAGE_TOKENS * view.images


@dataclass(frozen=True, slots=True)
class Usage:
    """`Compactor.usage()`'s answer: tokens counted (the messages + the fixed part), the fixed part alone (system
    prompt, tool definitions, room reserved for the output), messages, and the share of the window when one is
    given (`tokens / context_window`, rounded to 4 places)."""

    tokens: int
    fixed_tokens: int
    messages: int
    context_window: int | None = None
    share: float | None = None


def usage_report(message_tokens: int, fixed_tokens: int, messages: int, context_window: int | None) -> Usage:
    tokens = message_tokens + fixed_tokens
    return Usage(
        tokens=tokens,
        fixed_tokens=fixed_tokens,
        messages=messages,
        context_window=context_window,
        share=round(tokens / context_window, 4) if context_window else None,
    )


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

    @property
    def target(self) -> int | None:
        """Where steps 1-2 stop once triggered: a quarter of the limit under it, so that the rewrite of the
        already-sent prefix (a cache miss from the first message changed) comes in batches, not on every request."""
        return None if self.limit is None else self.limit - self.limit // 4

    def fits(self, tokens: int) -> bool:
        return self.limit is None or tokens <= self.limit
