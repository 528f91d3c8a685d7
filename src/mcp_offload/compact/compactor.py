"""`AsyncCompactor` and its sync twin `Compactor`: keep an agent loop's message list small, losslessly.

    from mcp_offload import Compactor

    with Compactor(session="my-agent") as compactor:           # the per-user store; store="redis://…" works too
        messages = compactor.compact(messages)                 # big tool results → reference + preview
        messages = compactor.compact(messages, context_window=200_000)   # + the budget policy (budget.py)
        tools = compactor.tools("anthropic")                   # the five retrieval tools, that SDK's format
        text = compactor.run_tool("read_large_output", {"handle": "out_…", "start_line": 10})

`compact` never mutates the caller's list or messages and returns a new list of plain dicts in the same format;
a message it leaves untouched is the caller's own object. With `context_window` it fits the window or raises
`ContextWindowExceeded` (the order of the steps: budget.py).

Cache safety is the gateway's: tool results go through the same core (`cachesafe.rewrite.rewrite_messages`; the
`format=` words "anthropic" / "openai" / "responses" name the APIs "anthropic" / "openai_chat" / "responses") with
the session's `DecisionRecord` beside the store (`GatewaySession` of this compactor's scope). A decision (offloaded
as a handle derived from the session and the part's call id + content, with its exact reference bytes; or inline for
good) is taken once and applied on every later call, for any boundary, after a restart and by every instance on
the same store or Redis. New results are decided at first sight inside the boundary; an already-sent prefix is
rewritten only by the cost rule (keep-last) or under window pressure, in batches, and the record says which
(reason "threshold", "cost" or "pressure"). The transcript note (step 3) is recorded too; steps 5-7 are
deterministic from the input (derived handles).

A malformed list raises ValueError naming the message index before anything is stored. A store failure (full,
unreachable, content over the size cap) leaves that result inline: the call still returns, and the failure is in
`compactor.last_report.warnings` and logged as a warning on `mcp_offload.compact`; a record that cannot be read
leaves the whole list as it came (nothing lost; the cache misses once).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Concatenate, ParamSpec, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.detect import api_of_format, detect_api
from mcp_offload.apis.message import Message, Part, ToolResult, dump_block
from mcp_offload.cachesafe.record import Decision, open_record, part_digest
from mcp_offload.cachesafe.rewrite import (
    CHARS_PER_TOKEN,
    Pressure,
    RewritePolicy,
    json_chars,
    rewrite_messages,
)
from mcp_offload.cachesafe.session import GatewaySession
from mcp_offload.cachesafe.tool_defs import api_tool_definitions, tool_definitions
from mcp_offload.compact.boundary import Boundary, BoundarySpec
from mcp_offload.compact.budget import (
    IMAGE_TOKENS,
    BudgetPolicy,
    CountTokens,
    Known,
    MessageLedger,
    Usage,
    usage_report,
)
from mcp_offload.compact.transcript import Summarize, note_text, readable_text, run_summarize, transcript_text
from mcp_offload.core import api
from mcp_offload.core.pipeline import run_tool
from mcp_offload.core.render import render_reference
from mcp_offload.core.results import OffloadOutput
from mcp_offload.core.services import Services, build_services
from mcp_offload.core.tools import TOOLS_BY_NAME, CallContext
from mcp_offload.errors import ContextWindowExceeded, StoreError
from mcp_offload.settings import Settings
from mcp_offload.store.handles import PREFIX, derived_handle

log = logging.getLogger("mcp_offload.compact")
REFERENCE_PREFIX = "Stored as " + PREFIX
# the least a keep-last prefix batch clears (Anthropic's clear_tool_uses `clear_at_least` default)
KEEP_LAST_BATCH_TOKENS = 20_000


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
class _Request:
    """One `compact` call's message list as it is being reduced, with each message's view and count."""

    api: LlmApi
    ledger: MessageLedger
    messages: list[Message]
    known: list[Known]

    def tokens(self, i: int) -> int:
        return self.ledger.tokens(self.known[i])

    def total(self) -> int:
        return sum(self.tokens(i) for i in range(len(self.messages)))

    def update(self, messages: list[Message]) -> bool:
        """Take the core's result (untouched messages are the same objects). True if any changed."""
        if messages is self.messages:
            return False
        if len(messages) != len(self.messages):  # restored by an expansion (a gateway sharing the session's record)
            self.messages = list(messages)
            self.known = [self.ledger.known(self.api, m, i) for i, m in enumerate(self.messages)]
            return True
        changed = False
        for i, (old, new) in enumerate(zip(self.messages, messages, strict=True)):
            if new is not old:
                self.known[i] = self.ledger.known(self.api, new, i)
                changed = True
        self.messages = list(messages)
        return changed

    def replace(self, i: int, message: Message) -> None:
        self.messages[i] = message
        self.known[i] = self.ledger.known(self.api, message, i)


@dataclass(frozen=True, slots=True)
class _ImagePart:
    message: int
    result: ToolResult
    part: Part
    tool: str | None
    digest: str


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
        # the cache-safe core's session: its record (beside the store) holds this compactor's decisions
        self._core_session = GatewaySession(key=self.scope.key, scope=self.scope, explicit=True)
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
        model: str | None = None,
    ) -> list[Message]:
        """A new list in the same format with large tool results (and, over budget, more: budget.py) stored.

        With `context_window`, the request is counted whole: the messages, `system` (the system prompt, when the
        API takes it beside the messages), `tools` (your tool definitions), the five retrieval tools (unless
        `retrieval_tools=False`: you do not send `compactor.tools(...)`) and `max_output_tokens` reserved for the
        answer. The result fits the window or `ContextWindowExceeded` is raised, naming what could not be reduced.
        `model` (the request's model name) picks the provider's cache prices for the cost rule.
        """
        if isinstance(messages, str | bytes | dict) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a list of messages")
        if threshold_tokens < 0:
            raise ValueError("threshold_tokens must be >= 0")
        if max_output_tokens < 0:
            raise ValueError("max_output_tokens must be >= 0")
        llm_api = api_of_format(format) if format else detect_api(messages)
        bound = Boundary.parse(boundary)
        budget = BudgetPolicy(context_window, trigger)
        request = self._read(llm_api, messages)  # all validated before anything is stored
        report = CompactReport(format=_format_name(llm_api), messages_in=len(request.messages))
        self.last_report = report
        windowed = budget.limit is not None
        fixed = self._fixed_parts(llm_api, system, tools, retrieval_tools, max_output_tokens) if windowed else {}
        fixed_tokens = sum(fixed.values())
        if windowed:
            report.tokens_before = fixed_tokens + request.total()
        eligible = bound.eligible([k.view for k in request.known])
        # step 1 at first sight, window or not: inside the boundary every undecided result is new to the record
        # (last-turn, all, keep-first); keep-last's results were sent inline while they were kept, so leaving the
        # kept messages is a prefix rewrite: only under the cost rule or window pressure, in batches
        tail = None if bound.kind == "keep-last" else eligible
        policy = RewritePolicy(
            threshold_tokens=threshold_tokens,
            retrieval="visible",
            clear_tool_uses=None,
            batch_tokens=self._batch_tokens(request, bound, eligible),
        )
        stored = await self._core(request, policy, report, tail=tail, eligible=eligible, model=model)
        await self._images(request, report, eligible if tail is not None or stored else range(0))
        await self._recorded_transcripts(request, bound, report)
        if budget.limit is None or budget.target is None or context_window is None:
            report.messages_out = len(request.messages)
            return request.messages
        total = fixed_tokens + request.total()
        if total > budget.limit:  # steps 1 and 2 under window pressure, in a batch down to the target
            for floor in (threshold_tokens, self.settings.preview_tokens):
                total = await self._relieve(request, policy, report, eligible, floor, total, budget.target, model)
        if total > budget.limit:  # step 3: older turns into a transcript
            total = await self._transcript_step(request, bound, total, summarize, report)
        if total > context_window:  # steps 4-7, boundaries notwithstanding
            total = await self._last_resort(request, policy, report, total, budget.limit, model)
        report.tokens_after, report.fits = total, total <= budget.limit
        report.messages_out = len(request.messages)
        if total > context_window:
            raise ContextWindowExceeded(total, context_window, self._irreducible(fixed, request))
        return request.messages

    def _batch_tokens(self, request: _Request, bound: Boundary, eligible: range) -> int | None:
        """keep-last: a prefix batch rewrites the kept messages after it too (the cache misses from the batch on), so
        it must clear at least what they hold, and at least KEEP_LAST_BATCH_TOKENS: each rewrite then pays for the
        cache write it causes, and the prefix is rewritten seldom."""
        if bound.kind != "keep-last":
            return None
        # in the core's unit (its cost rule sizes the batch by the 4-chars-a-token estimate, not by our exact count)
        kept = sum(json_chars(m) for m in request.messages[eligible.stop :]) // CHARS_PER_TOKEN
        return max(KEEP_LAST_BATCH_TOKENS, kept)

    async def _core(
        self,
        request: _Request,
        policy: RewritePolicy,
        report: CompactReport,
        *,
        tail: range | None,
        eligible: range | None,
        model: str | None,
        pressure: Pressure | None = None,
    ) -> bool:
        """One pass of the cache-safe core (cachesafe.rewrite) over the request: every recorded decision applied,
        new ones taken by its rules (+ `pressure`). True when it stored something new."""
        try:
            done = await rewrite_messages(
                self.services,
                request.api.name,
                self._core_session,
                request.messages,
                policy,
                model=model,
                tail=tail,
                eligible=eligible,
                pressure=pressure,
                source="compact",
                keep_inline_on_store_failure=True,
            )
        except StoreError as exc:  # the record is down: nothing is lost, the messages go as they are
            self._warn(report, f"could not read the decision record ({type(exc).__name__}: {exc}); nothing offloaded")
            return False
        for warning in done.warnings:
            self._warn(report, warning)
        report.offloaded += done.offloaded
        request.update(done.messages)
        return bool(done.offloaded)

    async def _relieve(
        self,
        request: _Request,
        policy: RewritePolicy,
        report: CompactReport,
        eligible: range | None,
        floor: int,
        total: int,
        goal: int,
        model: str | None,
    ) -> int:
        """Window pressure, measured here exactly: the core offloads inline results of at least `floor` tokens in
        `eligible`, oldest first, until the request is under `goal` (recorded with reason "pressure")."""
        fixed = total - request.total()
        while total > goal:
            pressure = Pressure(floor_tokens=floor, clear_tokens=total - goal, count=self._count)
            stored = await self._core(
                request, policy, report, tail=range(0), eligible=eligible, model=model, pressure=pressure
            )
            region = range(len(request.messages)) if eligible is None else eligible
            stored = await self._images(request, report, region) or stored
            if not stored:
                break
            total = fixed + request.total()
        return total

    async def _images(self, request: _Request, report: CompactReport, region: range) -> bool:
        """Image parts of tool results (the core reads text only), through the same decision record: a recorded
        decision applies wherever its image is; an undecided image in `region` is stored as a blob under a handle
        derived from the session and its content. True when it stored something new."""
        images = self._image_parts(request)
        if not images:
            return False
        record = open_record(self.services)
        try:
            decisions = (await record.state(self._core_session, [m.digest for m in images])).decisions
        except StoreError as exc:
            self._warn(report, f"could not read the decision record ({type(exc).__name__}: {exc}); images inline")
            return False
        new: dict[str, Decision] = {}
        for image in images:
            if image.digest in decisions or image.digest in new or image.message not in region:
                continue
            decision = await self._store_image(image, report)
            if decision is not None:
                new[image.digest] = decision
        if new:
            try:
                decisions.update(await record.decide(self._core_session, new, tools=False))
            except StoreError as exc:
                self._warn(report, f"could not record the images ({type(exc).__name__}: {exc}); they stay inline")
                return False
            report.offloaded += [d.handle for d in new.values()]
        replaced: dict[int, dict[int, tuple[ToolResult, dict[int, str]]]] = {}
        for image in images:
            decision = decisions.get(image.digest)
            if decision is not None and decision.offloaded:
                slot = replaced.setdefault(image.message, {}).setdefault(image.result.slot, (image.result, {}))
                slot[1][image.part.index] = decision.text
        for i, slots in replaced.items():
            message = request.messages[i]
            for result, texts in slots.values():
                message = request.api.messages.replace_parts(message, result, texts)  # slots do not move
            request.replace(i, message)
        return bool(new)

    def _image_parts(self, request: _Request) -> list[_ImagePart]:
        names = {c.call_id: c.name for k in request.known for c in k.view.calls}
        found: list[_ImagePart] = []
        for i, known in enumerate(request.known):
            for result in known.view.results:
                tool = names.get(result.call_id)
                if tool in TOOLS_BY_NAME:
                    continue  # one of our own tools (the model's retrieval): offloading it again would loop
                for part in result.parts:
                    if part.image is not None:
                        key = "image:" + hashlib.sha256(part.image).hexdigest()
                        found.append(_ImagePart(i, result, part, tool, part_digest(result.call_id, part.index, key)))
        return found

    async def _store_image(self, image: _ImagePart, report: CompactReport) -> Decision | None:
        label = f"{image.tool or 'tool'} result {image.result.call_id}"
        assert image.part.image is not None
        try:
            stored = await api.offload_bytes(
                self.services,
                self.scope,
                image.part.image,
                mime_type=image.part.mime_type,
                name=label,
                source="compact",
                handle=derived_handle(self.scope.key, image.digest),
            )
        except Exception as exc:  # a store failure must not lose the image: it stays inline
            self._warn(report, f"could not store {label} ({type(exc).__name__}: {exc}); it stays inline")
            return None
        text = render_reference(stored)
        return Decision(stored.handle, text, image.result.call_id, image.tool, IMAGE_TOKENS, self._count(text))

    def _fixed_parts(
        self, llm_api: LlmApi, system: object, tools: Sequence[object] | None, retrieval: bool, reserve: int
    ) -> dict[str, int]:
        """The tokens of what the messages share the window with, by part (for the error message)."""
        parts = {"room reserved for the output (max_output_tokens)": reserve}
        if system is not None:
            parts["the system prompt"] = self._count(system if isinstance(system, str) else _json(system))
        if tools:
            parts["your tool definitions"] = self._count(_json([dump_block(t, 0) for t in tools]))
        if retrieval:
            parts["the five retrieval tools"] = self._retrieval_tools_tokens(llm_api)
        return parts

    def _retrieval_tools_tokens(self, llm_api: LlmApi) -> int:
        known = self._tool_tokens.get(llm_api.name)
        if known is None:
            known = self._tool_tokens[llm_api.name] = self._count(_json(api_tool_definitions(llm_api)))
        return known

    async def _last_resort(
        self,
        request: _Request,
        policy: RewritePolicy,
        report: CompactReport,
        total: int,
        limit: int,
        model: str | None,
    ) -> int:
        """Steps 4-7 (the module docstring of budget.py), each until the request is under `limit`."""
        reference = self.settings.preview_tokens
        total = await self._relieve(request, policy, report, None, reference, total, limit, model)  # step 4
        notes = request.api.messages
        for i in range(len(request.messages)):  # step 5: tool-call arguments
            if total <= limit:
                return total
            message = await self._offload_arguments(request, i, reference, report)
            if message is not request.messages[i]:
                before = request.tokens(i)
                request.replace(i, message)
                total += request.tokens(i) - before
        user_turns = [i for i, k in enumerate(request.known) if k.view.opens_turn and not k.view.pinned]
        for i in user_turns:  # step 6: the user's older messages; step 7: the last one, only if nothing else fits
            if total <= limit:
                break
            if request.tokens(i) <= 2 * reference:  # a reference would not be much smaller
                continue
            label = f"user message {i}"
            stored = await self._store_text(transcript_text([request.messages[i]]), label, report)
            if stored is None:
                continue
            text = f"[The {label} is stored as {stored.handle}, as one JSON message.]\n{render_reference(stored)}"
            before = request.tokens(i)
            request.replace(i, notes.note_message(text))
            total += request.tokens(i) - before
        return total

    async def _offload_arguments(self, request: _Request, i: int, reference: int, report: CompactReport) -> Message:
        out = request.messages[i]
        for call in request.known[i].view.calls:
            if call.name in TOOLS_BY_NAME or self.services.tokens.count_upto(call.arguments, reference) <= reference:
                continue
            label = f"arguments of the {call.name or 'tool'} call {call.call_id}"
            stored = await self._store_text(call.arguments, label, report)
            if stored is not None:
                out = request.api.messages.replace_call_arguments(out, call.call_id, render_reference(stored))
        return out

    async def _offload_text(self, text: str, label: str) -> OffloadOutput:
        """Store `text` (a transcript, a call's arguments, a user message: the steps the core does not take) under a
        handle derived from the session and the content: the same history reduces to the same bytes in every process
        (a restart, a second instance), so the prompt cache keeps hitting."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        handle = derived_handle(self.scope.key, "compact", digest)
        return await api.offload(self.services, self.scope, text, name=label, source="compact", handle=handle)

    async def _store_text(self, text: str, label: str, report: CompactReport) -> OffloadOutput | None:
        try:
            stored = await self._offload_text(text, label)
        except Exception as exc:  # a store failure must not lose it: it stays inline
            self._warn(report, f"could not store the {label} ({type(exc).__name__}: {exc}); it stays inline")
            return None
        report.offloaded.append(stored.handle)
        return stored

    def _warn(self, report: CompactReport, warning: str) -> None:
        log.warning("%s", warning)
        report.warnings.append(warning)

    def _irreducible(self, fixed: dict[str, int], request: _Request) -> list[str]:
        lines = [f"{part}: {tokens:,} tokens" for part, tokens in fixed.items() if tokens]
        n = len(request.messages)
        largest = sorted(range(n), key=request.tokens, reverse=True)[:3]
        lines += [f"message {i} ({request.known[i].view.role}): {request.tokens(i):,} tokens" for i in sorted(largest)]
        lines.append(f"{n} messages in all")
        return lines

    def _read(self, llm_api: LlmApi, messages: Sequence[object]) -> _Request:
        """The messages as plain dicts (the caller's own dicts as they are) with their views, checked: every tool
        result answers an earlier call."""
        dicts = [llm_api.messages.to_dict(m, i) for i, m in enumerate(messages)]
        known = [self._ledger.known(llm_api, m, i) for i, m in enumerate(dicts)]
        declared: set[str] = set()
        for i, k in enumerate(known):
            for result in k.view.results:
                if result.call_id not in declared:
                    raise ValueError(
                        f"message {i}: tool result for call id {result.call_id!r}, which no earlier message calls"
                    )
            declared.update(c.call_id for c in k.view.calls)
        return _Request(llm_api, self._ledger, dicts, known)

    async def _transcript_step(
        self, request: _Request, bound: Boundary, total: int, summarize: Summarize | None, report: CompactReport
    ) -> int:
        """Step 3: older turns into one stored transcript, the note recorded (sticky) under their digest."""
        older = bound.older_turns([k.view for k in request.known])
        if len(older) < 2:
            return total
        first, last = older.start, older.stop - 1
        label = f"transcript of messages {first}-{last}"
        try:
            stored = await self._offload_text(transcript_text(request.messages[first : last + 1]), label)
        except Exception as exc:
            self._warn(report, f"could not store the {label} ({type(exc).__name__}: {exc}); those turns stay inline")
            return total
        summary = None
        if summarize is not None:
            try:
                summary = await run_summarize(
                    summarize, readable_text([k.view for k in request.known[first : last + 1]], first)
                )
            except Exception as exc:
                report.warnings.append(f"summarize failed ({type(exc).__name__}: {exc}); used the transcript preview")
                log.warning("summarize failed: %s", exc)
        note = note_text(first, last, stored, summary)
        try:  # the first note recorded for these turns wins (another instance, an earlier summary)
            held = await open_record(self.services).add_transcript(
                self._core_session, _turns_digest(request, first, last + 1), json.dumps({"note": note})
            )
            note = json.loads(held)["note"]
        except StoreError as exc:
            self._warn(report, f"could not record the {label} ({type(exc).__name__}: {exc}); used it once")
        report.transcript = stored.handle
        before = sum(request.tokens(i) for i in range(first, last + 2))
        self._put_note(request, first, last, note)
        return total - before + request.tokens(first)

    async def _recorded_transcripts(self, request: _Request, bound: Boundary, report: CompactReport) -> None:
        """Put back the transcript notes an earlier call recorded for these older turns (the longest one first,
        then any recorded over its result): a transcript, once taken, is sent as the same bytes on every later
        call, like any other decision."""
        record = open_record(self.services)
        while True:
            views = [k.view for k in request.known]
            older = bound.older_turns(views)
            if len(older) < 2:
                return
            first = older.start
            digests = _turns_digests(
                request, first, [j for j in range(first + 2, older.stop + 1) if views[j].opens_turn]
            )
            try:
                found = await record.transcripts(self._core_session, list(digests))
            except StoreError as exc:
                self._warn(report, f"could not read the decision record ({type(exc).__name__}: {exc})")
                return
            if not found:
                return
            digest = max(found, key=digests.__getitem__)
            try:
                note = json.loads(found[digest])["note"]
            except (ValueError, KeyError, TypeError):
                return
            self._put_note(request, first, digests[digest] - 1, str(note))

    def _put_note(self, request: _Request, first: int, last: int, note: str) -> None:
        """Messages `first`..`last` out; the note joins the user message that opens the next turn (older_turns ends
        at one): no two user messages in a row, which the Anthropic API refuses."""
        merged = request.api.messages.prepend_note(request.messages[last + 1], note)
        request.messages[first : last + 2] = [merged]
        request.known[first : last + 2] = [request.ledger.known(request.api, merged, first)]

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
        llm_api = api_of_format(format) if format else detect_api(messages)
        request = self._read(llm_api, messages)
        fixed = sum(self._fixed_parts(llm_api, system, tools, retrieval_tools, max_output_tokens).values())
        return usage_report(request.total(), fixed, len(request.messages), context_window)

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
        return (await run_tool(spec, CallContext(self.services, self.scope), arguments)).text

    # -- lifetime --------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        if self._services is not None:
            services, self._services = self._services, None
            await services.aclose()

    async def __aenter__(self) -> AsyncCompactor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _turns_digest(request: _Request, start: int, stop: int) -> str:
    """The key of the older turns `start`..`stop - 1`: where they start and what they hold."""
    return next(iter(_turns_digests(request, start, [stop])))


def _turns_digests(request: _Request, start: int, stops: Sequence[int]) -> dict[str, int]:
    """`_turns_digest(request, start, stop)` -> stop, for each of the ascending `stops`, in one pass."""
    h = hashlib.sha256(f"{_format_name(request.api)}:{start}:".encode())
    at, out = start, {}
    for stop in stops:
        for known in request.known[at:stop]:
            h.update(known.key)
        at = stop
        out[h.hexdigest()] = stop
    return out


def _format_name(llm_api: LlmApi) -> str:
    """The API's `format=` word (report, digests, tool definitions); its name for one the Compactor does not offer."""
    return llm_api.format_name or llm_api.name


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


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
