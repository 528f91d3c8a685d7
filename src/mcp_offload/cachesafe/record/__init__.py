"""The per-session decision record: sticky offload decisions, expansions, the tools flag and counters, in the store.

`open_record(services)` gives the record beside the services' store (a directory: fs.py; `redis://…`: redis.py),
opened once per `Services` and closed with them. `DecisionRecord` is the typed view the gateway uses; the fields it
writes are listed in base.py. `record_expansion` is what the server calls after a transparent retrieval loop (or a
mixed retrieval + client tool turn), so later requests can be restored to what the upstream really saw.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.history import canonical_bytes
from mcp_offload.apis.message import Message
from mcp_offload.cachesafe.record.base import RECORD_TTL_S, RecordBackend
from mcp_offload.store.location import open_beside

if TYPE_CHECKING:  # annotations only: `mcp-offload stats` reads the record without the services' imports
    from mcp_offload.cachesafe.session import CacheSafeSession
    from mcp_offload.core.services import Services

T = TypeVar("T")

ATTACHMENT = "gateway.record"
TOOLS_FIELD, EXPANDED_FIELD, BYPASS_FIELD = "tools", "expanded", "bypass"
Reason = Literal["threshold", "cost", "pressure"]


@dataclass(frozen=True, slots=True)
class Decision:
    """A tool result part offloaded as `handle`, shown to the model as `text` (the exact replacement bytes); or,
    with an empty handle and text, kept inline for good (its reference would not have been smaller)."""

    handle: str
    text: str
    call_id: str
    tool: str | None
    tokens: int  # the part's tokens (what inlining it would cost)
    reference_tokens: int = 0  # the replacement text's tokens
    reason: Reason = "threshold"

    @property
    def offloaded(self) -> bool:
        """False for a decision to keep the part inline (its reference would not have been smaller)."""
        return bool(self.handle)

    @property
    def tokens_kept_out(self) -> int:
        return max(self.tokens - self.reference_tokens, 0) if self.offloaded else 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> Decision | None:
        try:
            data = json.loads(raw)
            return cls(
                handle=str(data["handle"]),
                text=str(data["text"]),
                call_id=str(data["call_id"]),
                tool=None if data.get("tool") is None else str(data["tool"]),
                tokens=int(data.get("tokens") or 0),
                reference_tokens=int(data.get("reference_tokens") or 0),
                reason=data.get("reason") if data.get("reason") in ("threshold", "cost", "pressure") else "threshold",
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True, slots=True)
class Expansion:
    """What stands for a client's copy of one model response: `messages` (the upstream-true messages, in request
    form) and `pending` (results of the gateway's own calls in the last of them, merged where the client's own
    results for that response start: the mixed retrieval + client tool case)."""

    messages: list[Message]
    pending: list[Message] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"messages": self.messages, "pending": self.pending}, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> Expansion | None:
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        messages, pending = data.get("messages"), data.get("pending", [])
        if not (isinstance(messages, list) and isinstance(pending, list)):
            return None
        if not all(isinstance(m, dict) for m in (*messages, *pending)):
            return None
        return cls(messages, pending)


@dataclass(slots=True)
class SessionState:
    """What one turn needs from the record, read in one round trip."""

    tools: bool
    expanded: bool
    bypass: str | None
    decisions: dict[str, Decision]  # by part digest; parts not in here are inline


def part_digest(call_id: str, part: int, text: str) -> str:
    """The key of one tool result part: its call id, position and content (SHA-256)."""
    h = hashlib.sha256()
    for piece in (call_id, str(part), text):
        data = piece.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def unit_digest(api: LlmApi, messages: Sequence[Message], previous: Message | None = None) -> str:
    """The key of a model response as a client sends it back (normalized: robust to SDK re-serialization); with
    `previous`, also keyed by the message it answered (two identical short answers in one session stay apart)."""
    history = api.history
    normal = history.normalize_unit(messages)
    if previous is None:
        return hashlib.sha256(canonical_bytes([api.name, normal])).hexdigest()
    return hashlib.sha256(canonical_bytes([api.name, normal, history.normalize_message(previous)])).hexdigest()


UNSAVED_SESSIONS = 1_000  # counters kept in memory while the store is down, for this many sessions at most


class DecisionRecord:
    def __init__(self, backend: RecordBackend) -> None:
        self.backend = backend
        self.unsaved: dict[str, dict[str, int]] = {}  # counters the store refused, added with the next write

    async def add_counts(self, session: CacheSafeSession, counts: Mapping[str, int]) -> None:
        """Add to the session's counters. When the store is down the counts are kept in memory (bounded) and added
        with the session's next successful write, then the store's error is raised."""
        merged = dict(counts)
        for name, value in self.unsaved.pop(session.key, {}).items():
            merged[name] = merged.get(name, 0) + value
        try:
            await self.backend.add(session.key, merged)
        except BaseException:
            self.unsaved[session.key] = merged
            while len(self.unsaved) > UNSAVED_SESSIONS:
                self.unsaved.pop(next(iter(self.unsaved)))
            raise

    async def state(self, session: CacheSafeSession, digests: Sequence[str]) -> SessionState:
        fields = [TOOLS_FIELD, EXPANDED_FIELD, BYPASS_FIELD, *(f"d:{d}" for d in digests)]
        found = await self.backend.get(session.key, fields)
        return SessionState(
            tools=TOOLS_FIELD in found,
            expanded=EXPANDED_FIELD in found,
            bypass=found.get(BYPASS_FIELD),
            decisions=_parsed(found, "d:", digests, Decision.from_json),
        )

    async def decide(
        self, session: CacheSafeSession, decisions: Mapping[str, Decision], *, tools: bool
    ) -> dict[str, Decision]:
        """Record offload decisions (set-if-absent) and, with `tools`, that the session has the retrieval tools.
        Returns the decision each digest holds afterwards: ours, or the one another instance recorded first."""
        items: dict[str, str] = {}
        for digest, decision in decisions.items():
            raw = decision.to_json()
            items[f"d:{digest}"] = raw
            if decision.offloaded:
                items[f"h:{decision.handle}"] = digest  # the handle's decision, found by digest (no second copy)
        if tools:
            items[TOOLS_FIELD] = "1"
        held = await self.backend.put_if_absent(session.key, items)
        winners: dict[str, Decision] = {}
        for digest, ours in decisions.items():
            stored = held.get(f"d:{digest}")
            winners[digest] = (Decision.from_json(stored) if stored is not None else None) or ours
        return winners

    async def producer(self, session: CacheSafeSession, handle: str) -> Decision | None:
        """The decision that stored `handle` in this session (which tool call produced it), if the record has it."""
        digest = (await self.backend.get(session.key, [f"h:{handle}"])).get(f"h:{handle}")
        if digest is None:
            return None
        raw = (await self.backend.get(session.key, [f"d:{digest}"])).get(f"d:{digest}")
        return Decision.from_json(raw) if raw is not None else None

    async def expansions(self, session: CacheSafeSession, digests: Sequence[str]) -> dict[str, Expansion]:
        found = await self.backend.get(session.key, [f"x:{d}" for d in digests])
        return _parsed(found, "x:", digests, Expansion.from_json)

    async def add_expansion(self, session: CacheSafeSession, digest: str, expansion: Expansion, order: int) -> None:
        """Record `expansion` for the client copy `digest` unless one of a later request (`order`) is recorded."""
        items = {f"x:{digest}": (order, expansion.to_json()), EXPANDED_FIELD: (0, "1")}
        await self.backend.put_latest(session.key, items)

    async def transcripts(self, session: CacheSafeSession, digests: Sequence[str]) -> dict[str, str]:
        """The `Compactor`'s recorded transcript notes among `digests` (digest -> the note's JSON)."""
        found = await self.backend.get(session.key, [f"t:{d}" for d in digests])
        return {d: found[f"t:{d}"] for d in digests if f"t:{d}" in found}

    async def add_transcript(self, session: CacheSafeSession, digest: str, note: str) -> str:
        """Record (set-if-absent) the note that stands for the older turns with this digest; the note it holds
        afterwards (ours, or the one another instance recorded first)."""
        held = await self.backend.put_if_absent(session.key, {f"t:{digest}": note})
        return held.get(f"t:{digest}", note)

    async def mark_bypass(self, session: CacheSafeSession, reason: str) -> None:
        await self.backend.put_if_absent(session.key, {BYPASS_FIELD: reason or "bypass"})


def _parsed(
    found: Mapping[str, str], prefix: str, digests: Sequence[str], parse: Callable[[str], T | None]
) -> dict[str, T]:
    """Each digest's entry under `prefix` in `found`, parsed; one missing or unreadable is left out."""
    parsed: dict[str, T] = {}
    for digest in digests:
        raw = found.get(prefix + digest)
        value = parse(raw) if raw is not None else None
        if value is not None:
            parsed[digest] = value
    return parsed


def _redis_backend(url: str) -> RecordBackend:
    from mcp_offload.cachesafe.record.redis import RedisRecord

    return RedisRecord(url)


def _directory_backend(path: str) -> RecordBackend:
    from mcp_offload.cachesafe.record.fs import FilesystemRecord

    return FilesystemRecord(path)


def _open_backend(location: str) -> RecordBackend:
    return open_beside(location, directory=_directory_backend, redis=_redis_backend)


@asynccontextmanager
async def record_beside(location: str) -> AsyncIterator[DecisionRecord]:
    """The record beside the store at `location` on its own, for a reader that needs nothing else of the services
    (`mcp-offload stats`: no tokenizer, no workers); closed on the way out."""
    record = DecisionRecord(_open_backend(location))
    try:
        yield record
    finally:
        await record.backend.aclose()


def open_record(services: Services) -> DecisionRecord:
    """The record beside `services`' store (opened on first use, closed by `services.aclose()`)."""
    found = services.attachments.get(ATTACHMENT)
    if isinstance(found, _Attached):
        return found.record
    attached = _Attached(DecisionRecord(_open_backend(services.settings.store_location())))
    services.attachments[ATTACHMENT] = attached
    return attached.record


@dataclass(slots=True)
class _Attached:
    record: DecisionRecord

    async def aclose(self) -> None:
        await self.record.backend.aclose()


def _as_list(value: Message | Sequence[Message]) -> list[Message]:
    if isinstance(value, dict):
        return [value]
    return [m for m in value]


async def record_expansion(
    services: Services,
    session: CacheSafeSession,
    api: LlmApi,
    client_message: Message | Sequence[Message],
    upstream_messages: Sequence[Message],
    *,
    previous_message: Message | None = None,
    order: int | None = None,
) -> None:
    """Remember that the client's copy of a model response (`client_message`: the assistant message it received;
    for Responses the list of output items) stands for `upstream_messages`: what the upstream really saw and
    produced in that turn, in request form, from the first model message on, e.g.
    `[assistant(tool_use r1), user(tool_result r1), assistant(final)]` after a transparent loop.

    Mixed turn (the model called a retrieval tool and a client tool): `upstream_messages` ends with the results of
    the gateway's own calls (`[assistant(tool_use r1, tool_use c1), user(tool_result r1)]`; Chat: tool messages;
    Responses: `function_call_output` items): those are merged, on later turns, in front of the client's own results
    for that response.

    `previous_message`: the last message of the client's request that produced this response, as the client sent it
    (before the rewrite). Pass it: it keys the expansion by what the response answered too, so two identical client
    copies in one session (a short "Done." twice) are restored each to their own exchange.

    `order`: when the request that produced the response arrived (`arrival_order()`, the default: now). A retried
    request (the client sent the same request again after a timeout, a replay) gets the same answer text from a new
    exchange (new call ids): the client keeps the answer of its latest request, so the expansion of the latest
    arrival replaces an earlier one for the same copy, whichever finishes last, on any instance.

    Raises `StoreUnavailable` when the store is down (nothing is recorded: later turns then send the client's copy,
    which costs cache hits but loses nothing)."""
    history = api.history
    client = _as_list(client_message)
    upstream = [dict(m) for m in upstream_messages]
    cut = len(upstream)
    while cut > 0 and history.is_result_message(upstream[cut - 1]):
        cut -= 1
    expansion = Expansion(messages=upstream[:cut], pending=upstream[cut:])
    if not expansion.messages:
        raise ValueError("upstream_messages must hold the model's messages, not only tool results")
    when = arrival_order() if order is None else order
    await open_record(services).add_expansion(session, unit_digest(api, client, previous_message), expansion, when)


def arrival_order() -> int:
    """The order of a request arriving now: microseconds since the epoch (exact in Redis' Lua numbers)."""
    return time.time_ns() // 1_000


__all__ = [
    "RECORD_TTL_S",
    "Decision",
    "DecisionRecord",
    "Expansion",
    "SessionState",
    "arrival_order",
    "open_record",
    "part_digest",
    "record_expansion",
    "unit_digest",
]
