"""`AsyncCompactor` and its sync twin `Compactor`: keep an agent loop's message list small, losslessly.

    from mcp_offload import Compactor

    with Compactor(session="my-agent") as compactor:           # the per-user store; store="redis://…" works too
        messages = compactor.compact(messages)                 # big tool results → reference + preview
        messages = compactor.compact(messages, context_window=200_000)   # + the budget policy (budget.py)
        tools = compactor.tools("anthropic")                   # the five retrieval tools, that SDK's format
        text = compactor.run_tool("read_large_output", {"handle": "out_…", "start_line": 10})

`compact` never mutates the caller's list or messages and returns a new list of plain dicts in the same format.
With `context_window` it fits the window or raises `ContextWindowExceeded` (the order of the steps: budget.py).
Decisions are cache-safe: taken at first sight, under handles derived from the session and the content (the same
history compacts to the same bytes after a restart), and the already-sent prefix is rewritten only in batches.
A malformed list raises ValueError naming the message index before anything is stored. A store failure (full,
unreachable, content over the size cap) leaves that result inline: the call still returns, and the failure is in
`compactor.last_report.warnings` and logged as a warning on `mcp_offload.compact`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import secrets
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcp_offload.cachesafe.tool_defs import tool_definitions
from mcp_offload.compact.boundary import Boundary, BoundarySpec
from mcp_offload.compact.budget import BudgetPolicy, CountTokens, Entry, MessageLedger, Usage, usage_report
from mcp_offload.compact.transcript import (
    NOTE_PREFIX,
    Summarize,
    note_text,
    readable_text,
    run_summarize,
    transcript_text,
)
from mcp_offload.core import api
from mcp_offload.core.render import render_reference
from mcp_offload.core.results import OffloadOutput
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import ContextWindowExceeded
from mcp_offload.messages import Message, MessageFormat, ToolResult, detect_format, get_format
from mcp_offload.messages.base import dump_block
from mcp_offload.server.tools import TOOLS_BY_NAME, ToolCall, call_tool
from mcp_offload.settings import Settings
from mcp_offload.store.handles import derived_handle

log = logging.getLogger("mcp_offload.compact")
REFERENCE_PREFIX = "Stored as out_"
# keep-last offloads the results that left the kept messages when they add up to this many tokens (the size of
# Anthropic's clear_tool_uses `clear_at_least` default): one cache miss per batch instead of one per request
KEEP_LAST_BATCH_TOKENS = 20_000


@dataclass(slots=True)
class CompactReport:
    """What the last `compact` call did."""

    format: str
    messages_in: int
    messages_out: int = 0
    offloaded: list[str] = field(default_factory=list)  # handles stored for tool results, in order
    transcript: str | None = None  # handle of the transcript of older turns, when that step ran
    tokens_before: int | None = None  # counted only when a context window is given
    tokens_after: int | None = None
    fits: bool | None = None  # under trigger × window afterwards (None: no window given)
    warnings: list[str] = field(default_factory=list)  # store failures etc.: the result concerned stayed inline


def _is_compacted(text: str) -> bool:
    return text.startswith(REFERENCE_PREFIX) or text.startswith(NOTE_PREFIX)


class AsyncCompactor:
    """Compaction and in-process retrieval over the mcp-offload store, for one session."""

    def __init__(
        self,
        store: str | None = None,
        session: str | None = None,
        *,
        count_tokens: CountTokens | None = None,
        **settings: Any,
    ) -> None:
        unknown = set(settings) - set(Settings.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        self.settings = Settings.from_env().with_overrides(store=store, **settings)
        self.session = session or "compact-" + secrets.token_hex(8)
        self.scope = api.SessionScope.named(self.session)
        self._services: Services | None = build_services(self.settings)
        exact = self.settings.tokens_exact_chars
        tokens = self._services.tokens
        self._count: CountTokens = count_tokens or (lambda text: tokens.count_large(text, exact)[0])
        self._ledger = MessageLedger(self._count)
        self._tool_tokens: dict[str, int] = {}
        self.last_report: CompactReport | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("this compactor is closed")
        return self._services

    # -- compaction ------------------------------------------------------------------------------------
    async def compact(
        self,
        messages: Sequence[object],
        *,
        boundary: BoundarySpec | Boundary = "last-turn",
        threshold_tokens: int = 2000,
        context_window: int | None = None,
        trigger: float = 0.8,
        summarize: Summarize | None = None,
        format: str | None = None,
        system: object = None,
        tools: Sequence[object] | None = None,
        max_output_tokens: int = 0,
        retrieval_tools: bool = True,
    ) -> list[Message]:
        """A new list in the same format with large tool results (and, over budget, more: budget.py) stored.

        With `context_window`, the request is counted whole: the messages, `system` (the system prompt, when the
        API takes it beside the messages), `tools` (your tool definitions), the five retrieval tools (unless
        `retrieval_tools=False`: you do not send `compactor.tools(...)`) and `max_output_tokens` reserved for the
        answer. The result fits the window or `ContextWindowExceeded` is raised, naming what could not be reduced.
        """
        if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of messages")
        if threshold_tokens < 0:
            raise ValueError("threshold_tokens must be >= 0")
        if max_output_tokens < 0:
            raise ValueError("max_output_tokens must be >= 0")
        fmt = get_format(format) if format else detect_format(messages)
        bound = Boundary.parse(boundary)
        policy = BudgetPolicy(context_window, trigger)
        read = self._read(fmt, messages)  # all validated before anything is stored
        entries = [e.latest() for e, _ in read]
        passed = _passed_objects(read)
        report = CompactReport(format=fmt.name, messages_in=len(entries))
        self.last_report = report
        fixed = (
            self._fixed_parts(fmt, system, tools, retrieval_tools, max_output_tokens)
            if policy.limit is not None
            else {}
        )
        windowed = policy.limit is not None
        total = sum(fixed.values()) + sum(self._ledger.tokens(e) for e in entries) if windowed else 0
        report.tokens_before = total if windowed else None
        names = _call_names(entries)
        eligible: Sequence[int] = bound.eligible([e.view for e in entries])
        # step 1 at first sight, window or not: a big result is decided when it first comes, not after riding inline
        # (keep-last: what left the kept messages goes in batches, so the prompt cache holds between them)
        first_sight = (
            () if bound.kind == "keep-last" and not self._batch_due(entries, eligible, threshold_tokens) else eligible
        )
        total = await self._results_pass(fmt, entries, first_sight, names, threshold_tokens, report, total, None)
        if policy.limit is not None and total > policy.limit:  # steps 1 and 2 under the budget, in a batch
            for threshold in (threshold_tokens, self.settings.preview_tokens):
                total = await self._results_pass(fmt, entries, eligible, names, threshold, report, total, policy.target)
        if policy.limit is not None and total > policy.limit:  # step 3: older turns into a transcript
            entries, total = await self._transcript_step(fmt, bound, entries, total, summarize, report)
        if policy.limit is not None and context_window is not None:
            if total > context_window:  # steps 4-7, boundaries notwithstanding
                entries, total = await self._last_resort(fmt, entries, names, total, policy.limit, report)
            report.tokens_after, report.fits = total, total <= policy.limit
            if total > context_window:
                raise ContextWindowExceeded(total, context_window, self._irreducible(fixed, entries))
        report.messages_out = len(entries)
        # a message left as it came is the caller's own object (adapters map the result back by identity)
        return [queue.popleft() if (queue := passed.get(id(e))) else e.out for e in entries]

    def _batch_due(self, entries: list[Entry], eligible: Sequence[int], threshold: int) -> bool:
        """Whether the results that left the kept-last messages add up to a batch worth a prefix rewrite: every
        rewrite of an already-sent message makes the provider's cache miss from there on and write the rest again
        (at least the kept messages), so a batch is at least KEEP_LAST_BATCH_TOKENS and at least what the kept
        messages cost: each rewrite then pays for the cache write it causes."""
        kept = sum(self._ledger.tokens(e) for e in entries[len(eligible) :])
        batch = max(KEEP_LAST_BATCH_TOKENS, kept)
        pending = 0
        for i in eligible:
            entry = entries[i]
            if entry.view.results and entry.settled_at is None and self._ledger.tokens(entry) > threshold:
                pending += self._ledger.tokens(entry)
                if pending >= batch:
                    return True
        return False

    def _fixed_parts(
        self, fmt: MessageFormat, system: object, tools: Sequence[object] | None, retrieval: bool, reserve: int
    ) -> dict[str, int]:
        """The tokens of what the messages share the window with, by part (for the error message)."""
        parts = {"room reserved for the output (max_output_tokens)": reserve}
        if system is not None:
            parts["the system prompt"] = self._count(system if isinstance(system, str) else _json(system))
        if tools:
            parts["your tool definitions"] = self._count(_json([dump_block(t, 0) for t in tools]))
        if retrieval:
            parts["the five retrieval tools"] = self._retrieval_tools_tokens(fmt.name)
        return parts

    def _retrieval_tools_tokens(self, format_name: str) -> int:
        known = self._tool_tokens.get(format_name)
        if known is None:
            known = self._tool_tokens[format_name] = self._count(_json(tool_definitions(format_name)))
        return known

    async def _results_pass(
        self,
        fmt: MessageFormat,
        entries: list[Entry],
        indexes: Iterable[int],
        names: dict[str, str],
        threshold: int,
        report: CompactReport,
        total: int,
        limit: int | None,
    ) -> int:
        """Offload the tool results over `threshold` of `entries[indexes]`, oldest first, until under `limit`."""
        for i in indexes:
            if limit is not None and total <= limit:
                break
            entry = entries[i]
            if not entry.view.results or (entry.settled_at is not None and entry.settled_at <= threshold):
                continue
            new = await self._offload_results(fmt, entry, names, threshold, report)
            if new is not entry:
                total += self._ledger.tokens(new) - self._ledger.tokens(entry)
                entries[i] = new
        return total

    async def _last_resort(
        self,
        fmt: MessageFormat,
        entries: list[Entry],
        names: dict[str, str],
        total: int,
        limit: int,
        report: CompactReport,
    ) -> tuple[list[Entry], int]:
        """Steps 4-7 (the module docstring of budget.py), each until the request is under `limit`."""
        reference = self.settings.preview_tokens
        total = await self._results_pass(fmt, entries, range(len(entries)), names, reference, report, total, limit)
        for i in range(len(entries)):  # step 5: tool-call arguments
            if total <= limit:
                return entries, total
            new = await self._offload_arguments(fmt, entries[i], reference, report)
            if new is not entries[i]:
                total += self._ledger.tokens(new) - self._ledger.tokens(entries[i])
                entries[i] = new
        user_turns = [i for i, e in enumerate(entries) if e.view.opens_turn and not e.view.pinned]
        for i in user_turns:  # step 6: the user's older messages; step 7: the last one, only if nothing else fits
            if total <= limit:
                break
            new = await self._offload_user_message(fmt, entries[i], i, reference, report)
            if new is not entries[i]:
                total += self._ledger.tokens(new) - self._ledger.tokens(entries[i])
                entries[i] = new
        return entries, total

    async def _offload_arguments(
        self, fmt: MessageFormat, entry: Entry, reference: int, report: CompactReport
    ) -> Entry:
        out = entry.out
        for call in entry.view.calls:
            if call.name in TOOLS_BY_NAME or self.services.tokens.count_upto(call.arguments, reference) <= reference:
                continue
            label = f"arguments of the {call.name or 'tool'} call {call.call_id}"
            stored = await self._store_text(call.arguments, label, report)
            if stored is not None:
                out = fmt.replace_call_arguments(out, call.call_id, render_reference(stored))
        return entry if out is entry.out else self._replaced(fmt, entry, out)

    async def _offload_user_message(
        self, fmt: MessageFormat, entry: Entry, index: int, reference: int, report: CompactReport
    ) -> Entry:
        if self._ledger.tokens(entry) <= 2 * reference:  # a reference would not be much smaller
            return entry
        label = f"user message {index}"
        stored = await self._store_text(transcript_text([entry.out]), label, report)
        if stored is None:
            return entry
        text = f"[The {label} is stored as {stored.handle}, as one JSON message.]\n{render_reference(stored)}"
        return self._replaced(fmt, entry, fmt.note_message(text))

    async def _offload_text(self, text: str, label: str) -> OffloadOutput:
        """Store `text` under a handle derived from the session and the content: the same result gets the same
        handle and the same reference bytes in every process (a restart, a second instance), so a history compacted
        again after a restart is byte-identical to what was sent before it (the prompt cache keeps hitting)."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        handle = derived_handle(self.scope.key, "compact", digest)
        return await api.offload(self.services, self.scope, text, name=label, source="compact", handle=handle)

    async def _store_text(self, text: str, label: str, report: CompactReport) -> OffloadOutput | None:
        try:
            stored = await self._offload_text(text, label)
        except Exception as exc:  # a store failure must not lose it: it stays inline
            warning = f"could not store the {label} ({type(exc).__name__}: {exc}); it stays inline"
            log.warning("%s", warning)
            report.warnings.append(warning)
            return None
        report.offloaded.append(stored.handle)
        return stored

    def _replaced(self, fmt: MessageFormat, entry: Entry, out: Message) -> Entry:
        new = Entry(source=out, out=out, view=fmt.view(out, 0), settled_at=entry.settled_at)
        self._ledger.remember(fmt, new)
        entry.compacted = new
        return new

    def _irreducible(self, fixed: dict[str, int], entries: list[Entry]) -> list[str]:
        lines = [f"{part}: {tokens:,} tokens" for part, tokens in fixed.items() if tokens]
        largest = sorted(range(len(entries)), key=lambda i: self._ledger.tokens(entries[i]), reverse=True)[:3]
        lines += [
            f"message {i} ({entries[i].view.role}): {self._ledger.tokens(entries[i]):,} tokens" for i in sorted(largest)
        ]
        lines.append(f"{len(entries)} messages in all")
        return lines

    def _read(self, fmt: MessageFormat, messages: Sequence[object]) -> list[tuple[Entry, Message]]:
        """Each message's ledger entry and its plain dict, checked: every tool result answers an earlier call."""
        read = [self._ledger.entry(fmt, m, i) for i, m in enumerate(messages)]
        declared: set[str] = set()
        for i, (e, _) in enumerate(read):
            for result in e.view.results:
                if result.call_id not in declared:
                    raise ValueError(
                        f"message {i}: tool result for call id {result.call_id!r}, which no earlier message calls"
                    )
            declared.update(c.call_id for c in e.view.calls)
        return read

    async def _offload_results(
        self, fmt: MessageFormat, entry: Entry, names: dict[str, str], threshold: int, report: CompactReport
    ) -> Entry:
        out, failed = entry.out, False
        for result in entry.view.results:
            if names.get(result.call_id) in TOOLS_BY_NAME:
                continue  # one of our own tools (the model's retrieval): offloading it again would loop
            texts = await self._store_parts(result, names.get(result.call_id), threshold, report)
            if texts is None:
                failed = True
                continue
            if texts:
                out = fmt.replace_parts(out, result, texts)  # slots do not move when parts are replaced
        if out is entry.out:
            if not failed:
                entry.settled_at = threshold
            return entry
        new = Entry(source=out, out=out, view=fmt.view(out, 0), settled_at=None if failed else threshold)
        self._ledger.remember(fmt, new)
        entry.compacted = new  # the caller's own message object, passed again, stands for the compacted one
        return new

    async def _store_parts(
        self, result: ToolResult, tool: str | None, threshold: int, report: CompactReport
    ) -> dict[int, str] | None:
        """Reference text per stored part; None when the store failed (the result then stays inline whole)."""
        texts: dict[int, str] = {}
        label = f"{tool or 'tool'} result {result.call_id}"
        for part in result.parts:
            try:
                if part.text is not None:
                    if _is_compacted(part.text) or self.services.tokens.count_upto(part.text, threshold) <= threshold:
                        continue
                    stored = await self._offload_text(part.text, label)
                elif part.image is not None:
                    stored = await api.offload_bytes(
                        self.services, self.scope, part.image, mime_type=part.mime_type, name=label, source="compact"
                    )
                else:
                    continue
            except Exception as exc:  # a store failure must not lose the result: it stays inline
                warning = f"could not store {label} ({type(exc).__name__}: {exc}); it stays inline"
                log.warning("%s", warning)
                report.warnings.append(warning)
                return None
            report.offloaded.append(stored.handle)
            texts[part.index] = render_reference(stored)
        return texts

    async def _transcript_step(
        self,
        fmt: MessageFormat,
        bound: Boundary,
        entries: list[Entry],
        total: int,
        summarize: Summarize | None,
        report: CompactReport,
    ) -> tuple[list[Entry], int]:
        older = bound.older_turns([e.view for e in entries])
        if len(older) < 2:
            return entries, total
        first, last = older.start, older.stop - 1
        label = f"transcript of messages {first}-{last}"
        try:
            stored = await self._offload_text(transcript_text([e.out for e in entries[first : last + 1]]), label)
        except Exception as exc:
            warning = f"could not store the {label} ({type(exc).__name__}: {exc}); those turns stay inline"
            log.warning("%s", warning)
            report.warnings.append(warning)
            return entries, total
        summary = None
        if summarize is not None:
            try:
                summary = await run_summarize(
                    summarize, readable_text([e.view for e in entries[first : last + 1]], first)
                )
            except Exception as exc:
                report.warnings.append(f"summarize failed ({type(exc).__name__}: {exc}); used the transcript preview")
                log.warning("summarize failed: %s", exc)
        # the note joins the user message that opens the next turn (older_turns ends at one): no two user messages
        # in a row, which the Anthropic API refuses
        out = fmt.prepend_note(entries[last + 1].out, note_text(first, last, stored, summary))
        note = Entry(source=out, out=out, view=fmt.view(out, first), settled_at=entries[last + 1].settled_at)
        self._ledger.remember(fmt, note)
        report.transcript = stored.handle
        removed = sum(self._ledger.tokens(e) for e in entries[first : last + 2])
        return [*entries[:first], note, *entries[last + 2 :]], total - removed + self._ledger.tokens(note)

    # -- budget ----------------------------------------------------------------------------------------
    async def usage(
        self,
        messages: Sequence[object],
        *,
        context_window: int | None = None,
        format: str | None = None,
        system: object = None,
        tools: Sequence[object] | None = None,
        max_output_tokens: int = 0,
        retrieval_tools: bool = True,
    ) -> Usage:
        """Tokens the request costs, counted as `compact` counts them (budget.py): the messages plus the fixed part
        (`system`, `tools`, the retrieval tools, `max_output_tokens`), and its share of `context_window`."""
        fmt = get_format(format) if format else detect_format(messages)
        entries = [e for e, _ in self._read(fmt, messages)]
        fixed = sum(self._fixed_parts(fmt, system, tools, retrieval_tools, max_output_tokens).values())
        return usage_report(sum(self._ledger.tokens(e) for e in entries), fixed, len(entries), context_window)

    # -- retrieval tools in-process ---------------------------------------------------------------------
    def tools(self, format: str) -> list[dict[str, Any]]:
        """The five tools as `format` ("anthropic", "openai", "responses") tool definitions."""
        return tool_definitions(format)

    async def run_tool(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Run one of the five tools exactly as the MCP server does; an error comes back as its text."""
        spec = TOOLS_BY_NAME.get(name)
        if spec is None:
            known = ", ".join(TOOLS_BY_NAME)
            return f"Unknown tool {name!r}. Tools here: {known}."
        result = await call_tool(spec, ToolCall(self.services, self.scope), arguments)
        return "".join(getattr(block, "text", "") for block in result.content)

    # -- lifetime --------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        if self._services is not None:
            services, self._services = self._services, None
            await services.aclose()

    async def __aenter__(self) -> AsyncCompactor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _passed_objects(read: Sequence[tuple[Entry, Message]]) -> dict[int, deque[Message]]:
    """Per entry read as final (not compacted before), the caller's dicts with its content, in order. `compact`
    returns those for the entries it leaves alone, not the equal dict the content-keyed ledger kept from the call
    that first brought that content: an adapter maps the result back to its framework's messages by identity, so
    an untouched message must come back as the very object handed in."""
    passed: dict[int, deque[Message]] = defaultdict(deque)
    for entry, message in read:
        if entry.compacted is None:
            passed[id(entry)].append(message)
    return passed


def _call_names(entries: Sequence[Entry]) -> dict[str, str]:
    return {c.call_id: c.name for e in entries for c in e.view.calls}


P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[AsyncCompactor, P], Awaitable[R]],
) -> Callable[Concatenate[Compactor, P], R]:
    """`method` of `AsyncCompactor` as a blocking method of `Compactor`, run on its event loop thread: one signature
    and docstring for both (type checkers and IDEs see the async method's parameters, `help()` its text)."""

    def blocking(self: Compactor, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._call(method, self._async, *args, **kwargs)
        return result

    functools.update_wrapper(blocking, method)
    blocking.__qualname__ = f"Compactor.{method.__name__}"
    return blocking


class Compactor:
    """The sync twin of `AsyncCompactor` (same methods, same arguments), over its own event loop thread."""

    def __init__(
        self,
        store: str | None = None,
        session: str | None = None,
        *,
        count_tokens: CountTokens | None = None,
        **settings: Any,
    ) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._closed = False
        try:
            self._async: AsyncCompactor = self._portal.call(self._make, store, session, count_tokens, settings)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise

    @staticmethod
    async def _make(
        store: str | None, session: str | None, count_tokens: CountTokens | None, settings: dict[str, Any]
    ) -> AsyncCompactor:
        return AsyncCompactor(store, session, count_tokens=count_tokens, **settings)

    @property
    def session(self) -> str:
        return self._async.session

    @property
    def last_report(self) -> CompactReport | None:
        return self._async.last_report

    @property
    def services(self) -> Services:
        return self._async.services

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return await fn(*args, **kwargs)

        return self._portal.call(run)

    compact = _blocking(AsyncCompactor.compact)
    usage = _blocking(AsyncCompactor.usage)
    run_tool = _blocking(AsyncCompactor.run_tool)

    def tools(self, format: str) -> list[dict[str, Any]]:
        return self._async.tools(format)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._portal.call(self._async.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> Compactor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
