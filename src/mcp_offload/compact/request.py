"""One `compact` call's working state: the report it fills (`CompactReport`), the message list being reduced with
each message's view and count (`CompactRequest`), and what its steps use of the compactor (`StepContext`)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.message import Message
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.compact.budget import CountTokens, Known, TokenMemo
from mcp_offload.core import outputs
from mcp_offload.core.results import OffloadOutput
from mcp_offload.core.services import Services
from mcp_offload.store.handles import derived_handle

log = logging.getLogger("mcp_offload.compact")


@dataclass(slots=True)
class CompactReport:
    """What the last `compact` call did."""

    format: str
    messages_in: int
    messages_out: int = 0
    offloaded: list[str] = field(default_factory=list)  # handles stored by this call (not those already decided)
    transcript: str | None = None  # handle of the transcript of older turns, when that step ran
    tokens_before: int | None = None  # counted only when a context window is given
    tokens_after: int | None = None
    fits: bool | None = None  # under trigger × window afterwards (None: no window given)
    warnings: list[str] = field(default_factory=list)  # store failures etc.: the result concerned stayed inline


@dataclass(slots=True)
class CompactRequest:
    """One `compact` call's message list as it is being reduced, with each message's view and count."""

    api: LlmApi
    memo: TokenMemo
    messages: list[Message]
    known: list[Known]

    def tokens(self, i: int) -> int:
        return self.memo.tokens(self.known[i])

    def total(self) -> int:
        return sum(self.tokens(i) for i in range(len(self.messages)))

    def update(self, messages: list[Message]) -> bool:
        """Take the core's result (untouched messages are the same objects). True if any changed."""
        if messages is self.messages:
            return False
        if len(messages) != len(self.messages):  # restored by an expansion (a gateway sharing the session's record)
            self.messages = list(messages)
            self.known = [self.memo.known(self.api, m, i) for i, m in enumerate(self.messages)]
            return True
        changed = False
        for i, (old, new) in enumerate(zip(self.messages, messages, strict=True)):
            if new is not old:
                self.known[i] = self.memo.known(self.api, new, i)
                changed = True
        self.messages = list(messages)
        return changed

    def replace(self, i: int, message: Message) -> None:
        self.messages[i] = message
        self.known[i] = self.memo.known(self.api, message, i)


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a compaction step uses of its compactor: the store, the session (its scope and its decision record's
    session) and the token count."""

    services: Services
    scope: outputs.SessionScope
    core_session: CacheSafeSession
    count: CountTokens

    def warn(self, report: CompactReport, warning: str) -> None:
        log.warning("%s", warning)
        report.warnings.append(warning)

    async def offload_text(self, text: str, label: str) -> OffloadOutput:
        """Store `text` (a transcript, a call's arguments, a user message: the steps the core does not take) under a
        handle derived from the session and the content: the same history reduces to the same bytes in every process
        (a restart, a second instance), so the prompt cache keeps hitting."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        handle = derived_handle(self.scope.key, "compact", digest)
        return await outputs.offload(self.services, self.scope, text, name=label, source="compact", handle=handle)

    async def store_text(self, text: str, label: str, report: CompactReport) -> OffloadOutput | None:
        try:
            stored = await self.offload_text(text, label)
        except Exception as exc:  # a store failure must not lose it: it stays inline
            self.warn(report, f"could not store the {label} ({type(exc).__name__}: {exc}); it stays inline")
            return None
        report.offloaded.append(stored.handle)
        return stored

    def _warn(self, report: CompactReport, warning: str) -> None:
        log.warning("%s", warning)
        report.warnings.append(warning)
