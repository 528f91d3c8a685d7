"""The cache-safe core: rewrite one message list so that large new tool results become references and everything
else stays byte-identical, turn after turn, across restarts and instances.

    done = await rewrite_messages(services, "anthropic", session, messages, RewritePolicy())
    send(done.messages)   # `messages` itself (the same list) when done.changed is False

The gateway and the LiteLLM guardrail (`request_rewrite.rewrite_request`, over a whole request body) and the
`Compactor` (`compact`, over an agent loop's list) all call it: one set of rules, one decision record.

The rules, in the order they run on each request (pure functions over the message list + the session's record):

1. Session (session.py) and its record state, one store round trip: the decisions of every tool result part in the
   request (keyed by call id + part + SHA-256 of its text), the tools flag, the bypass flag (a session the server
   marked, `DecisionRecord.mark_bypass`, after the upstream refused a rewritten request, is forwarded as is).
2. Expansions: a model response the client got from a transparent retrieval loop (or a mixed turn) is put back as
   the messages the upstream really saw (record/__init__.py: `record_expansion`), the same bytes every turn.
3. Decisions, tail only. A part with a recorded decision gets that decision's exact replacement text. A part with
   none is inline, except in the tail (after the last model output: the results the client has just added), where
   a part of `threshold_tokens` or more is stored under a handle derived from the session key and its digest
   (`derived_handle`) and replaced by the MCP tools' own reference text (`render_reference`), unless that reference
   would not be at least 10 % smaller (a result just over a low threshold: its preview is nearly all of it), in
   which case it stays inline. Decisions are recorded
   set-if-absent: two instances racing on one result agree on the first writer's decision and bytes.
4. The prefix (inline parts before the tail) is rewritten only in batches, and only (a) under window pressure: the
   prompt (estimated at 4 chars a token) is over `clear_tool_uses.trigger_tokens`; then every inline result but the
   last `keep_tool_uses` ones and those of `exclude_tools` is offloaded, if that clears at least
   `clear_at_least_tokens` (Anthropic's `clear_tool_uses` semantics, losslessly); or (b) by the cost rule (cost.py):
   when rewriting from some position on pays at the provider's cache prices over the expected remaining requests
   and clears at least `clear_at_least_tokens`. Both turn inline into offloaded, recorded and then sticky. With
   `offload_user_pastes_tokens`, the user's own texts that large (never those of the last user turn) are candidates
   of both rules too (never of the tail rule: a text the user just wrote is what the model must read now).
   A cost-rule batch clears at least `batch_tokens` when the policy sets it (the `Compactor`'s keep-last: what the
   kept messages hold), else `clear_at_least_tokens`.
5. Tools: from the request that offloads the session's first output on (transparent retrieval), the retrieval tools
   (tool_text.py) are appended after the client's own, byte-identical on every later request. A session that never
   offloads gets nothing: the body object comes back unchanged.

The `Compactor` calls the same function with what the gateway leaves at its defaults (`rewrite_messages`): `tail`
(where results are new: its boundary, since a compactor's list has no "already sent" marker; keep-last leaves the
default), `eligible` (its boundary bounds every rule; recorded decisions apply everywhere), and `pressure`, window
pressure it measured exactly (`Pressure`: inline parts of at least `floor_tokens` in `eligible`, oldest first, until
`clear_tokens` are cleared; reason "pressure"), so its budget steps 1, 2 and 4 are decisions in the same record.

Never touched: everything that is not a tool result's text (system prompt, user text, thinking / reasoning,
compaction and server-tool blocks), results of the retrieval tools themselves and texts that already are references.

Failures: a request without a message list (or with a message that is not an object) is forwarded as is, for the
upstream to answer; a message or block this module cannot read (an unknown role such as Anthropic's `system`
messages between turns, an unknown block) is kept as is and skipped, the rest is rewritten (`History.view`).
A store failure raises the store's error with nothing recorded (the gateway then forwards the
original body, fail-open, or answers 503 with `fail_closed`); a store refusing an output (full, over a quota) is
such a failure. A result over the store's size cap for one output (`TooLarge`) just stays inline.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.history import History, ResultPart
from mcp_offload.apis.message import Message, MessageView, Part, ToolResult
from mcp_offload.cachesafe.cost import Candidate, best_batch, remaining_requests
from mcp_offload.cachesafe.policy import ClearToolUses, Pressure, RewritePolicy
from mcp_offload.cachesafe.record import Decision, DecisionRecord, Reason, open_record, part_digest, unit_digest
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.cachesafe.tool_text import is_retrieval_tool
from mcp_offload.core import outputs as core
from mcp_offload.core.render import render_reference
from mcp_offload.core.services import Services
from mcp_offload.core.slices import in_slices
from mcp_offload.errors import InvalidContent, StoreError, TooLarge
from mcp_offload.providers.base import Provider
from mcp_offload.providers.prices import CachePrices
from mcp_offload.providers.registry import home_of
from mcp_offload.store.handles import PREFIX, derived_handle

__all__ = ["MessagesRewrite", "rewrite_messages"]

log = logging.getLogger("mcp_offload.cachesafe")
CHARS_PER_TOKEN = 4  # the estimate used for positions and window pressure (exact counts only where they decide)
REFERENCE_PREFIX = "Stored as " + PREFIX
MAX_REFERENCE_SHARE = 0.9  # a reference must save at least 10 % of the tokens it stands for, or the text stays inline
PASTE_CALL_ID = "user-text"  # the "call id" of a user's own text offloaded under offload_user_pastes_tokens
DIGESTS_IN_THREAD_CHARS = 1 << 20  # texts this big are hashed in a thread (SHA-256: ~2 ms a MB, without the GIL)


@dataclass(slots=True)
class MessagesRewrite:
    """What `rewrite_messages` did to one message list."""

    messages: list[Message]  # the very input list when nothing changed
    changed: bool
    tools_on: bool  # the session has the retrieval tools (transparent retrieval): send them with this list
    offloaded: list[str] = field(default_factory=list)
    tokens_kept_out: int = 0
    tokens_offloaded: int = 0
    expanded: int = 0
    warnings: list[str] = field(default_factory=list)  # parts that stayed inline because the store refused them
    bypassed: bool = False  # the session is forwarded as is (the upstream refused a rewritten request)


async def rewrite_messages(
    services: Services,
    api: LlmApi,
    session: CacheSafeSession,
    messages: list[Message],
    policy: RewritePolicy,
    *,
    model: object = None,
    provider: Provider | None = None,
    head_chars: int | Callable[[], int] = 0,
    tail: range | None = None,
    eligible: range | None = None,
    pressure: Pressure | None = None,
    source: str = "gateway",
    keep_inline_on_store_failure: bool = False,
) -> MessagesRewrite:
    """The cache-safe rewrite of one message list (the rules 2-5 of the module docstring) for `session`: pure over the
    list and the session's record (the caller's list and messages are never mutated). `model` and `provider` (default:
    the API's home provider) pick the cache prices of the cost rule; `head_chars` is the size of what precedes the
    messages in the prompt (tools, system), or the function that measures it (only the prefix rules need it, on few
    turns).

    What the gateway leaves at their defaults, the `Compactor` sets: `tail`, the messages whose undecided parts are
    new (the threshold rule; default: after the last model output); `eligible`, the messages whose parts any rule may
    offload (the compactor's boundary; default: all); `pressure`, window pressure the caller measured (`Pressure`);
    `source`, the stored outputs' source; `keep_inline_on_store_failure`: a part the store refuses (full,
    unreachable) stays inline with a warning in `MessagesRewrite.warnings` instead of failing the whole turn.
    Recorded decisions apply wherever their parts are, whatever `eligible` says.

    Messages and blocks it cannot read are kept as they are and skipped (`History.view`). Raises `StoreError`
    (`StoreUnavailable`, `StoreFull`) when the record or the store fails (nothing recorded). The gateway
    (`rewrite_request`) and the `Compactor` share it."""
    history = api.history
    views = await in_slices(lambda i: history.view(messages[i], i), len(messages))  # big messages: the loop goes on
    scope = _Scope(tail, eligible, pressure, source, keep_inline_on_store_failure)
    priced = _Priced(api, provider, model if isinstance(model, str) else "")
    return await _Turn(services, api, history, session, policy, messages, views, priced, head_chars, scope).run()


@dataclass(frozen=True, slots=True)
class _Priced:
    """Where the request goes and for which model: the cache prices of the cost rule (asked only when it runs)."""

    api: LlmApi
    provider: Provider | None
    model: str

    def prices(self) -> CachePrices:
        return (self.provider or home_of(self.api)).cache_prices(self.api, self.model)


@dataclass(frozen=True, slots=True)
class _Scope:
    """The caller's choices beyond the policy (all default for the gateway)."""

    tail: range | None = None
    eligible: range | None = None
    pressure: Pressure | None = None
    source: str = "gateway"
    keep_inline_on_store_failure: bool = False

    def may_offload(self, message: int) -> bool:
        return self.eligible is None or message in self.eligible


def json_chars(value: Any) -> int:
    """Characters of every string in a JSON value (keys included): the cheap size estimate."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(k) + json_chars(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(json_chars(v) for v in value)
    return 1


@dataclass(slots=True)
class _Part:
    part: ResultPart
    digest: str
    decision: Decision | None = None
    paste: bool = False  # a user's own text (offload_user_pastes_tokens), not a tool result


class _Turn:
    def __init__(
        self,
        services: Services,
        api: LlmApi,
        history: History,
        session: CacheSafeSession,
        policy: RewritePolicy,
        messages: list[Message],
        views: list[MessageView],
        priced: _Priced,
        head_chars: int | Callable[[], int],
        scope: _Scope,
    ) -> None:
        self.services, self.api, self.history, self.session, self.policy = services, api, history, session, policy
        self.messages, self.views, self.priced, self.head_chars = messages, views, priced, head_chars
        self.scope = scope
        self.warnings: list[str] = []
        self.record: DecisionRecord = open_record(services)

    async def run(self) -> MessagesRewrite:
        history, session, policy = self.history, self.session, self.policy
        parts = await self._parts(self.messages, self.views)
        state = await self.record.state(session, [p.digest for p in parts])
        unchanged = MessagesRewrite(messages=self.messages, changed=False, tools_on=False)
        if state.bypass is not None:
            unchanged.bypassed = True
            return unchanged
        messages, views, restored = self.messages, self.views, 0
        if state.expanded:
            messages, restored = await self._restore(messages)
            if restored:
                restored_messages = messages
                views = await in_slices(lambda i: history.view(restored_messages[i], i), len(restored_messages))
                parts = await self._parts(messages, views)
        for p in parts:
            p.decision = state.decisions.get(p.digest)

        tail = self._tail_start(messages)
        fresh = range(tail, len(messages)) if self.scope.tail is None else self.scope.tail
        new: dict[str, tuple[_Part, Reason]] = {}
        for p in parts:
            if (
                p.decision is None
                and not p.paste
                and p.part.message in fresh
                and self.scope.may_offload(p.part.message)
                and p.part.text
                and self._offloadable(p.part)
            ):
                limit = policy.threshold_tokens
                if self.services.tokens.count_upto(p.part.text, limit) >= limit:
                    new[p.digest] = (p, "threshold")
        if self.scope.pressure is not None:
            for p in self._pressure_batch(parts, fresh, new, self.scope.pressure):
                new.setdefault(p.digest, (p, "pressure"))
        for p, reason in self._prefix_batch(messages, parts, tail, fresh):
            new.setdefault(p.digest, (p, reason))

        decided = await self._offload(new) if new else {}
        tools_on = policy.retrieval == "transparent" and (
            state.tools
            or any(p.decision is not None and p.decision.offloaded for p in parts)
            or any(d.offloaded for d in decided.values())
        )
        if decided or (tools_on and not state.tools):
            winners = await self.record.decide(session, decided, tools=tools_on)
            for p in parts:
                if p.digest in winners:
                    p.decision = winners[p.digest]

        applied = [
            p for p in parts if p.decision is not None and p.decision.offloaded and p.decision.text != p.part.text
        ]
        if not applied and not restored:
            return MessagesRewrite(messages=self.messages, changed=False, tools_on=tools_on, warnings=self.warnings)
        return MessagesRewrite(
            messages=self._apply(messages, applied),
            changed=True,
            tools_on=tools_on,
            offloaded=[d.handle for d in decided.values() if d.offloaded],
            tokens_offloaded=sum(d.tokens for d in decided.values() if d.offloaded),
            tokens_kept_out=sum(p.decision.tokens_kept_out for p in applied if p.decision is not None),
            expanded=restored,
            warnings=self.warnings,
        )

    # -- steps ---------------------------------------------------------------------------------------------
    async def _restore(self, messages: list[Message]) -> tuple[list[Message], int]:
        units = self.history.output_units(messages)
        keys = [  # (keyed by what it answered, keyed by the copy alone), all computed on the client's own list
            (
                unit_digest(self.api, messages[a:b], messages[a - 1]) if a > 0 else None,
                unit_digest(self.api, messages[a:b]),
            )
            for a, b in units
        ]
        found = await self.record.expansions(self.session, [d for pair in keys for d in pair if d is not None])
        if not found:
            return messages, 0
        out, restored = list(messages), 0
        for (a, b), (answered, alone) in reversed(list(zip(units, keys, strict=True))):
            expansion = (found.get(answered) if answered else None) or found.get(alone)
            if expansion is None:
                continue
            out = [*out[:a], *expansion.messages, *out[b:]]
            if expansion.pending:
                out = self.history.merge_results(out, a + len(expansion.messages), expansion.pending)
            restored += 1
        return out, restored

    def _tail_start(self, messages: Sequence[Message]) -> int:
        for i in range(len(messages) - 1, -1, -1):
            if self.history.is_model_output(messages[i]):
                return i + 1
        return 0

    async def _parts(self, messages: list[Message], views: Sequence[MessageView]) -> list[_Part]:
        """Every tool result text part, then (with `offload_user_pastes_tokens`) every large user text but those of
        the last user turn, each with its digest (in a thread when the texts are big: SHA-256 runs there without the
        GIL, and the event loop goes on meanwhile)."""
        sites = [(p, p.result.call_id, p.part.index, p.text, False) for p in self.history.result_parts(messages, views)]
        paste_tokens = self.policy.offload_user_pastes_tokens
        if paste_tokens is not None:
            last_turn = max((i for i, v in enumerate(views) if v.opens_turn), default=-1)
            for found in self.history.user_texts(messages, paste_tokens * CHARS_PER_TOKEN):
                if found.message == last_turn:
                    continue  # the last user turn is never touched
                part = Part(0, text=found.text)
                site = ResultPart(found.message, ToolResult(found.slot, PASTE_CALL_ID, (part,)), part, None)
                sites.append((site, PASTE_CALL_ID, found.slot, found.text, True))

        def digests() -> list[str]:
            return [part_digest(call_id, index, text) for _, call_id, index, text, _ in sites]

        if sum(len(site[3]) for site in sites) >= DIGESTS_IN_THREAD_CHARS:
            found_digests = await anyio.to_thread.run_sync(digests)
        else:
            found_digests = digests()
        return [
            _Part(site, digest, paste=paste)
            for (site, _, _, _, paste), digest in zip(sites, found_digests, strict=True)
        ]

    def _offloadable(self, part: ResultPart) -> bool:
        return not is_retrieval_tool(part.tool) and not part.text.startswith(REFERENCE_PREFIX)

    def _pressure_batch(
        self, parts: list[_Part], fresh: range, new: Mapping[str, tuple[_Part, Reason]], pressure: Pressure
    ) -> list[_Part]:
        """Under the caller's measured pressure: inline parts of at least `floor_tokens`, oldest first, until
        `clear_tokens` are cleared (a part clears its tokens less a reference's)."""
        count = pressure.count or (lambda text: len(text) // CHARS_PER_TOKEN)
        preview = self.services.settings.preview_tokens
        batch: list[_Part] = []
        cleared = 0
        for p in sorted(parts, key=lambda p: p.part.message):
            if cleared >= pressure.clear_tokens:
                break
            if (
                p.decision is not None
                or p.paste
                or p.digest in new
                or not self.scope.may_offload(p.part.message)
                or not p.part.text
                or not self._offloadable(p.part)
            ):
                continue
            tokens = count(p.part.text)
            if tokens >= pressure.floor_tokens:
                batch.append(p)
                cleared += max(tokens - preview, 0)
        return batch

    def _prefix_batch(
        self, messages: list[Message], parts: list[_Part], tail: int, fresh: range
    ) -> list[tuple[_Part, Reason]]:
        """Inline prefix parts to offload now under window pressure or the cost rule (empty: leave the prefix)."""
        policy = self.policy
        clear = policy.clear_tool_uses
        if clear is None and not policy.cost_rule:
            return []
        excluded = set(clear.exclude_tools) if clear is not None else set()
        result_floor = CHARS_PER_TOKEN * min(policy.threshold_tokens, 2 * self.services.settings.preview_tokens)
        eligible = [
            p
            for p in parts
            if p.decision is None
            and p.part.message < tail
            and p.part.message not in fresh
            and self.scope.may_offload(p.part.message)
            and self._offloadable(p.part)
            and (p.paste or ((p.part.tool or "") not in excluded and len(p.part.text) >= result_floor))
        ]
        eligible.sort(key=lambda p: p.part.message)  # pastes join the results in prompt order
        if not eligible:
            return []  # the usual case: every large result was decided in its own turn
        clear_at_least = clear.clear_at_least_tokens if clear is not None else ClearToolUses().clear_at_least_tokens
        if policy.batch_tokens is not None:
            clear_at_least = policy.batch_tokens
        preview = self.services.settings.preview_tokens
        # positions: estimated tokens from the prompt's start (tools and system first, as the providers cache them)
        starts, pos = [], self.head_chars() if callable(self.head_chars) else self.head_chars
        for m in messages:
            starts.append(pos)
            pos += json_chars(m)
        total_chars = pos - sum(
            len(p.part.text) - len(p.decision.text) for p in parts if p.decision is not None and p.decision.offloaded
        )
        prefix_tokens = (starts[tail] if tail < len(starts) else pos) // CHARS_PER_TOKEN
        results_order = list(dict.fromkeys((p.part.message, p.part.result.slot) for p in parts if not p.paste))
        kept_recent = set(results_order[-clear.keep_tool_uses :]) if clear and clear.keep_tool_uses > 0 else set()

        if clear is not None and total_chars // CHARS_PER_TOKEN > clear.trigger_tokens:
            floor = min(policy.threshold_tokens, 2 * preview)
            batch = [
                p
                for p in eligible
                if p.paste
                or (
                    (p.part.message, p.part.result.slot) not in kept_recent
                    and len(p.part.text) // CHARS_PER_TOKEN >= floor
                )
            ]
            if sum(len(p.part.text) // CHARS_PER_TOKEN - preview for p in batch) >= clear.clear_at_least_tokens:
                return [(p, "pressure") for p in batch]

        if policy.cost_rule:
            big = [p for p in eligible if p.paste or len(p.part.text) // CHARS_PER_TOKEN >= policy.threshold_tokens]
            if big:
                prices = self.priced.prices()
                candidates = [
                    Candidate(
                        position=starts[p.part.message] // CHARS_PER_TOKEN,
                        saved=max(len(p.part.text) // CHARS_PER_TOKEN - preview, 0),
                    )
                    for p in big
                ]
                requests = sum(1 for _ in self.history.output_units(messages))
                first = best_batch(
                    prices,
                    candidates,
                    prefix_tokens=prefix_tokens,
                    remaining=remaining_requests(requests),
                    clear_at_least=clear_at_least,
                )
                if first is not None:
                    return [(p, "cost") for p in big[first:]]
        return []

    async def _offload(self, new: Mapping[str, tuple[_Part, Reason]]) -> dict[str, Decision]:
        """Store each part under its derived handle, concurrently; the decisions to record, in the parts' order
        (parts too large for the store stay inline). A store failure fails the whole turn (nothing is recorded)."""
        found: dict[str, Decision] = {}
        try:
            async with anyio.create_task_group() as tg:
                for digest, (p, reason) in new.items():
                    tg.start_soon(self._offload_one, digest, p, reason, found)
        except ExceptionGroup as group:  # a failing store fails every put alike: report the first failure
            first: BaseException = group
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        return {digest: found[digest] for digest in new if digest in found}

    async def _offload_one(self, digest: str, p: _Part, reason: Reason, found: dict[str, Decision]) -> None:
        part = p.part
        if p.paste:
            label = f"user text {digest[:12]}"
        else:
            label = f"{part.tool or 'tool'} result {part.result.call_id}"
            if part.part.index:
                label += f" part {part.part.index}"
        try:
            stored = await core.offload(
                self.services,
                self.session.scope,
                part.text,
                name=label,
                source=self.scope.source,
                handle=derived_handle(self.session.key, digest),
            )
        except (TooLarge, InvalidContent) as exc:
            log.info("%s: %s stays inline (%s)", self.scope.source, label, exc)
            self.warnings.append(f"could not store {label} ({type(exc).__name__}: {exc}); it stays inline")
            return
        except StoreError as exc:
            if not self.scope.keep_inline_on_store_failure:
                raise
            self.warnings.append(f"could not store {label} ({type(exc).__name__}: {exc}); it stays inline")
            return
        text = render_reference(stored)
        reference_tokens = self.services.tokens.count(text)
        if reference_tokens > MAX_REFERENCE_SHARE * stored.tokens or len(text) >= len(part.text):
            # a small result's reference (its preview is nearly all of it) would not be smaller: it stays inline,
            # recorded so that no later turn tries again (the stored copy is harmless and expires)
            found[digest] = Decision("", "", part.result.call_id, part.tool, stored.tokens, reference_tokens, reason)
            return
        found[digest] = Decision(
            handle=stored.handle,
            text=text,
            call_id=part.result.call_id,
            tool=part.tool,
            tokens=stored.tokens,
            reference_tokens=reference_tokens,
            reason=reason,
        )

    def _apply(self, messages: list[Message], applied: Sequence[_Part]) -> list[Message]:
        by_message: dict[int, dict[tuple[int, str], tuple[ToolResult, dict[int, str]]]] = {}
        pastes: dict[int, list[tuple[int, str]]] = {}
        for p in applied:
            assert p.decision is not None
            result = p.part.result
            if p.paste:
                pastes.setdefault(p.part.message, []).append((result.slot, p.decision.text))
                continue
            slot = by_message.setdefault(p.part.message, {}).setdefault((result.slot, result.call_id), (result, {}))
            slot[1][p.part.part.index] = p.decision.text
        out = list(messages)
        for index in sorted({*by_message, *pastes}):
            message = out[index]
            for result, texts in by_message.get(index, {}).values():
                message = self.history.replace_parts(message, result, texts)
            for slot_index, text in pastes.get(index, []):
                message = self.history.replace_user_text(message, slot_index, text)
            out[index] = message
        return out
