"""`AsyncCompactor` (its blocking twin `Compactor`: sync.py): keep an agent loop's message list small, losslessly.

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
`format=` word is an API's name, "anthropic" / "openai_chat" / "responses" / "gemini", or one of its aliases such as
"openai" or "openai-responses": `apis.registry.api_named`) with the session's `DecisionRecord` beside the store
(`CacheSafeSession` of this compactor's scope). A decision (offloaded as a handle derived from the session and the
part's call id + content, with its exact reference bytes; or inline for good) is taken once and applied on every later
call, for any boundary, after a restart and by every instance on the same store or Redis. New results are decided at
first sight inside the boundary; an already-sent prefix is rewritten only by the cost rule (keep-last) or under window
pressure, in batches, and the record says which (reason "threshold", "cost" or "pressure"). The transcript note (step 3)
is recorded too; steps 5-7 are
deterministic from the input (derived handles).

A malformed list raises ValueError naming the message index before anything is stored. A store failure (full,
unreachable, content over the size cap) leaves that result inline: the call still returns, and the failure is in
`compactor.last_report.warnings` and logged as a warning on `mcp_offload.compact`; a record that cannot be read
leaves the whole list as it came (nothing lost; the cache misses once).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.detect import detect_api
from mcp_offload.apis.message import Message, dump_block
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import Pressure, RewritePolicy
from mcp_offload.cachesafe.rewrite import CHARS_PER_TOKEN, json_chars, rewrite_messages
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.cachesafe.tool_defs import api_tool_definitions
from mcp_offload.compact.boundary import Boundary, BoundarySpec
from mcp_offload.compact.budget import (
    BudgetPolicy,
    CountTokens,
    TokenMemo,
    Usage,
    usage_report,
)
from mcp_offload.compact.images import offload_images
from mcp_offload.compact.request import CompactReport, CompactRequest, StepContext
from mcp_offload.compact.transcript import Summarize, transcript_text
from mcp_offload.compact.transcript_record import recorded_transcripts, transcript_step
from mcp_offload.core import outputs
from mcp_offload.core.pipeline import run_tool
from mcp_offload.core.render import render_reference
from mcp_offload.core.services import Services, build_services
from mcp_offload.core.tools import TOOLS_BY_NAME, CallContext
from mcp_offload.errors import ContextWindowExceeded, StoreError
from mcp_offload.settings import Settings
from mcp_offload.store.handles import PREFIX

log = logging.getLogger("mcp_offload.compact")
REFERENCE_PREFIX = "Stored as " + PREFIX
# the least a keep-last prefix batch clears (Anthropic's clear_tool_uses `clear_at_least` default)
KEEP_LAST_BATCH_TOKENS = 20_000


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
        self.scope = outputs.SessionScope.named(self.session)
        # the cache-safe core's session: its record (beside the store) holds this compactor's decisions
        self._core_session = CacheSafeSession(key=self.scope.key, scope=self.scope, explicit=True)
        self._services: Services | None = build_services(self.settings)
        exact = self.settings.tokens_exact_chars
        tokens = self._services.tokens
        self._count: CountTokens = count_tokens or (lambda text: tokens.count_large(text, exact)[0])
        self._memo = TokenMemo(self._count)
        self._tool_tokens: dict[str, int] = {}
        self.last_report: CompactReport | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("this compactor is closed")
        return self._services

    @property
    def _ctx(self) -> StepContext:
        return StepContext(self.services, self.scope, self._core_session, self._count)

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
        llm_api = api_named(format) if format else detect_api(messages)
        bound = Boundary.parse(boundary)
        budget = BudgetPolicy(context_window, trigger)
        request = self._read(llm_api, messages)  # all validated before anything is stored
        report = CompactReport(format=llm_api.name, messages_in=len(request.messages))
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
        await offload_images(self._ctx, request, report, eligible if tail is not None or stored else range(0))
        await recorded_transcripts(self._ctx, request, bound, report)
        if budget.limit is None or budget.target is None or context_window is None:
            report.messages_out = len(request.messages)
            return request.messages
        total = fixed_tokens + request.total()
        if total > budget.limit:  # steps 1 and 2 under window pressure, in a batch down to the target
            for floor in (threshold_tokens, self.settings.preview_tokens):
                total = await self._relieve(request, policy, report, eligible, floor, total, budget.target, model)
        if total > budget.limit:  # step 3: older turns into a transcript
            total = await transcript_step(self._ctx, request, bound, total, summarize, report)
        if total > context_window:  # steps 4-7, boundaries notwithstanding
            total = await self._last_resort(request, policy, report, total, budget.limit, model)
        report.tokens_after, report.fits = total, total <= budget.limit
        report.messages_out = len(request.messages)
        if total > context_window:
            raise ContextWindowExceeded(total, context_window, self._irreducible(fixed, request))
        return request.messages

    def _batch_tokens(self, request: CompactRequest, bound: Boundary, eligible: range) -> int | None:
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
        request: CompactRequest,
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
                request.api,
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
            self._ctx.warn(
                report, f"could not read the decision record ({type(exc).__name__}: {exc}); nothing offloaded"
            )
            return False
        for warning in done.warnings:
            self._ctx.warn(report, warning)
        report.offloaded += done.offloaded
        request.update(done.messages)
        return bool(done.offloaded)

    async def _relieve(
        self,
        request: CompactRequest,
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
            stored = await offload_images(self._ctx, request, report, region) or stored
            if not stored:
                break
            total = fixed + request.total()
        return total

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
        request: CompactRequest,
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
            stored = await self._ctx.store_text(transcript_text([request.messages[i]]), label, report)
            if stored is None:
                continue
            text = f"[The {label} is stored as {stored.handle}, as one JSON message.]\n{render_reference(stored)}"
            before = request.tokens(i)
            request.replace(i, notes.note_message(text))
            total += request.tokens(i) - before
        return total

    async def _offload_arguments(
        self, request: CompactRequest, i: int, reference: int, report: CompactReport
    ) -> Message:
        out = request.messages[i]
        for call in request.known[i].view.calls:
            if call.name in TOOLS_BY_NAME or self.services.tokens.count_upto(call.arguments, reference) <= reference:
                continue
            label = f"arguments of the {call.name or 'tool'} call {call.call_id}"
            stored = await self._ctx.store_text(call.arguments, label, report)
            if stored is not None:
                out = request.api.messages.replace_call_arguments(out, call.call_id, render_reference(stored))
        return out

    def _irreducible(self, fixed: dict[str, int], request: CompactRequest) -> list[str]:
        lines = [f"{part}: {tokens:,} tokens" for part, tokens in fixed.items() if tokens]
        n = len(request.messages)
        largest = sorted(range(n), key=request.tokens, reverse=True)[:3]
        lines += [f"message {i} ({request.known[i].view.role}): {request.tokens(i):,} tokens" for i in sorted(largest)]
        lines.append(f"{n} messages in all")
        return lines

    def _read(self, llm_api: LlmApi, messages: Sequence[object]) -> CompactRequest:
        """The messages as plain dicts (the caller's own dicts as they are) with their views, checked: every tool
        result answers an earlier call."""
        dicts = [llm_api.messages.to_dict(m, i) for i, m in enumerate(messages)]
        known = [self._memo.known(llm_api, m, i) for i, m in enumerate(dicts)]
        declared: set[str] = set()
        for i, k in enumerate(known):
            for result in k.view.results:
                if result.call_id not in declared:
                    raise ValueError(
                        f"message {i}: tool result for call id {result.call_id!r}, which no earlier message calls"
                    )
            declared.update(c.call_id for c in k.view.calls)
        return CompactRequest(llm_api, self._memo, dicts, known)

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
        llm_api = api_named(format) if format else detect_api(messages)
        request = self._read(llm_api, messages)
        fixed = sum(self._fixed_parts(llm_api, system, tools, retrieval_tools, max_output_tokens).values())
        return usage_report(request.total(), fixed, len(request.messages), context_window)

    # -- retrieval tools in-process ---------------------------------------------------------------------
    def tools(self, format: str) -> list[dict[str, Any]]:
        """The five tools as tool definitions of the API `format` names: any word `compact(format=…)` takes
        ("anthropic", "openai_chat" or "openai", "responses", "gemini", …); `UnknownApi` lists them."""
        return api_tool_definitions(api_named(format))

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


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
