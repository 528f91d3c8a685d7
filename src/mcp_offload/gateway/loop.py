"""The transparent retrieval loop: when the model calls only the gateway's retrieval tools, answer them from the store
and call the model again, so the client sees one ordinary response (JSON or stream). Each function takes the turn
(turn.py): its request as planned, its retriever and limits, its follow-up calls (`Turn.follow_up`, prepared by the
provider), its framing, and its report, where the loop's figures go.

Rules, the same for every API:

- **Only retrieval calls** (names in `RETRIEVAL_TOOL_NAMES`, and only when the gateway injected the tools): run
  them (`run_retrieval`; a hostile or expired handle gets an error result, the loop goes on), append the assistant
  output and the results to the request, call again. After `max_loops` such trips the next call is the last one:
  it is sent with `tool_choice` "none" (the tools array stays byte-identical, so its cached prefix keeps hitting;
  only that call's message cache is rewritten). If the model calls retrieval tools even then, those calls are
  dropped and the turn ends (`end_turn` / `stop`).
- **Mixed turn** (retrieval calls and the client's own tool calls in one response): the retrieval calls are run
  (their answers are recorded), only the client's calls are passed on, and the stop reason stays `tool_use` /
  `tool_calls`. The model is not called again: the client runs its tools and sends the next request, and
  `rewrite_request` restores the exchange upstream-true from the expansion record (the assistant message with all
  its calls, and the retrieval results inserted into the client's tool-result message). Thinking blocks and their
  signatures stay exactly as the model produced them.
- **Expansion**: after a loop (or a mixed turn) `record_expansion` stores what the upstream really saw for the
  assistant message the client received, so later turns are restored byte-identical (prompt cache, signatures).
- **Streams are spliced, not buffered**: events go to the client as they arrive; only the retrieval tool calls and
  the terminal events are held (see each API's `dialect.py`). While the gateway runs retrieval calls and waits for
  the follow-up it sends keep-alives (`ping` events on Anthropic, SSE comments on OpenAI).
- **Failures**: a follow-up the upstream refuses, or a stream cut halfway, ends the client's stream with that API's
  error event (or, without a stream, answers with the upstream's error); nothing is left half-written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import orjson

from mcp_offload.apis.dialect import Answer, CallOutcome, Round
from mcp_offload.apis.usage import add_usage
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES
from mcp_offload.errors import reason_of
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.gateway.exchange import TurnReport
from mcp_offload.gateway.turn import Retriever, Turn
from mcp_offload.providers.framing import SSE, FrameReader, Framing

Emit = Callable[[bytes], Awaitable[None]]
NAMES = RETRIEVAL_TOOL_NAMES  # the tools whose calls the loop answers (the ones the gateway injects)


@dataclass(slots=True)
class _Next:
    """What to do after one upstream call."""

    answers: list[Answer]
    done: bool
    ignored_limit: bool = False  # the last call (tool_choice "none") called retrieval tools anyway: drop them, end


async def _next(outcome: CallOutcome, retriever: Retriever, report: TurnReport, final_sent: bool) -> _Next:
    retrieval = [c for c in outcome.calls if c.name in NAMES]
    if not retrieval:
        return _Next([], done=True)
    if final_sent:  # the model called retrieval tools although tool_choice was "none": end the turn here
        return _Next([], done=True, ignored_limit=True)
    answers = []
    for call in retrieval:
        answer, tokens = await retriever.answer(call)
        answers.append(answer)
        report.retrieval_calls += 1
        report.retrieval_errors += answer.is_error
        report.tokens_pulled_back += tokens
    if len(retrieval) < len(outcome.calls):
        report.mixed = True
        return _Next(answers, done=True)
    return _Next(answers, done=False)


@dataclass(slots=True)
class _Rounds:
    """One turn's retrieval rounds so far, and the follow-up request each one adds (JSON and streams alike)."""

    turn: Turn
    rounds: list[Round] = field(default_factory=list)
    final_sent: bool = False  # the last follow-up asked for no tools (tool_choice "none")

    async def next_request(self, outcome: CallOutcome) -> tuple[_Next, dict[str, Any] | None]:
        """Answer `outcome`'s retrieval calls: (what to do next, the follow-up request; None when the turn is
        done)."""
        turn, report = self.turn, self.turn.exchange.report
        step = await _next(outcome, turn.retriever, report, self.final_sent)
        if step.done:
            return step, None
        self.rounds.append(Round(outcome, step.answers))
        report.loops += 1
        self.final_sent = report.loops > turn.limits.max_loops
        return step, turn.dialect.follow_up(turn.plan.body, self.rounds, final=self.final_sent)


async def _record(turn: Turn, client_output: Any, rounds: list[Round], last: CallOutcome | None) -> None:
    if rounds:
        dialect = turn.dialect
        await turn.retriever.record_expansion(
            dialect.client_message(client_output), dialect.upstream_messages(rounds, last)
        )


async def loop_json(turn: Turn, first: dict[str, Any]) -> tuple[int, bytes]:
    """Run the loop on a JSON answer; (status, body) for the client."""
    dialect, report = turn.dialect, turn.exchange.report
    responses = [first]
    rounds = _Rounds(turn)
    outcome = dialect.outcome(first, NAMES)
    while True:
        step, body = await rounds.next_request(outcome)
        if body is None:
            break
        follow = await turn.follow_up(body)
        report.upstream_calls += 1
        try:
            raw = await follow.aread()
        finally:
            await follow.aclose()
        if follow.status_code >= 400:
            report.problem = f"follow-up refused ({follow.status_code})"
            return follow.status_code, raw
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise GatewayError(
                502, "upstream_bad_answer", "The upstream's answer to a follow-up call was not JSON."
            ) from None
        responses.append(parsed)
        outcome = dialect.outcome(parsed, NAMES)
    stop = dialect.end_stop if step.ignored_limit else None
    if report.mixed:
        rounds.rounds.append(Round(outcome, step.answers))
    merged = dialect.merged(responses, NAMES, stop)
    report.usage = {}
    for answered in responses:
        add_usage(report.usage, dialect.usage_of(answered))
    if rounds.rounds:
        last = None if report.mixed else (dialect.without_retrieval(outcome, NAMES) if stop else outcome)
        await _record(turn, dialect.client_output_of(merged), rounds.rounds, last)
    return 200, orjson.dumps(merged)


class Keepalive:
    """Sends the splicer's keep-alive every `interval_s` while `waiting` is set."""

    def __init__(self, emit: Emit, ping: Callable[[], bytes | None], interval_s: float) -> None:
        self._emit, self._ping, self._interval_s = emit, ping, interval_s
        self.waiting = False
        self.sent = 0

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._interval_s)
            payload = self._ping() if self.waiting else None
            if payload:
                try:
                    await self._emit(payload)
                except Exception:  # the client is gone: the request's disconnect watch ends the rest
                    return
                self.sent += 1


async def loop_stream(turn: Turn, first: httpx2.Response, emit: Emit) -> None:
    """Splice the first stream and every follow-up into one client stream, written through `emit` in the call's
    framing (the splice reads and writes events; the framing, bytes). When the client did not ask for a usage chunk
    (Chat), the gateway did, for its accounting, and the splice drops it."""
    splicer = turn.dialect.splicer(NAMES, client_usage=turn.plan.client_usage)
    emit = framed(emit, turn.framing)
    keepalive = Keepalive(emit, splicer.ping, turn.limits.ping_interval_s)
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(keepalive.run)
        try:
            await _splice(_Rounds(turn), first, emit, splicer, keepalive)
        except Exception as exc:  # raised out of the task group it would be wrapped in an ExceptionGroup
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _splice(rounds: _Rounds, response: httpx2.Response, emit: Emit, splicer: Any, keepalive: Keepalive) -> None:
    turn = rounds.turn
    dialect, report = turn.dialect, turn.exchange.report
    usage: dict[str, Any] = {}
    while True:
        if not await _relay_call(response, splicer, emit, keepalive, report, turn.framing.reader()):
            return
        outcome = splicer.end_call()
        add_usage(usage, outcome.usage)
        report.usage = usage
        keepalive.waiting = True
        step, body = await rounds.next_request(outcome)
        if body is None:
            break
        try:
            response = await turn.follow_up(body)
        except GatewayError as exc:
            report.problem = exc.code
            await emit(splicer.error(exc.code, exc.message))
            return
        report.upstream_calls += 1
        if response.status_code >= 400:
            try:
                detail = (await response.aread()).decode("utf-8", "replace")[:500]
            finally:
                await response.aclose()
            report.problem = f"follow-up refused ({response.status_code})"
            await emit(
                splicer.error(
                    "upstream_error",
                    f"The upstream refused the gateway's follow-up call ({response.status_code}): {detail}",
                )
            )
            return
    keepalive.waiting = False
    stop = dialect.end_stop if step.ignored_limit else None
    for chunk in splicer.finish(stop):
        await emit(chunk)
    if report.mixed:
        rounds.rounds.append(Round(outcome, step.answers))
    if rounds.rounds:
        last = None if report.mixed else (dialect.without_retrieval(outcome, NAMES) if stop else outcome)
        await _record(turn, splicer.client_output(), rounds.rounds, last)


async def _relay_call(
    response: httpx2.Response, splicer: Any, emit: Emit, keepalive: Keepalive, report: TurnReport, parser: FrameReader
) -> bool:
    """Forward one upstream stream through the splicer; False when the client's stream had to end here."""
    try:
        async for chunk in _chunks(response):
            outs: list[bytes] = []  # what this chunk's events give the client: one write (one socket send)
            for event in parser.feed(chunk):
                keepalive.waiting = False
                try:
                    outs.extend(splicer.feed(event))
                except (ValueError, TypeError, AttributeError, KeyError):
                    report.problem = "unreadable upstream event"
                    outs.append(
                        splicer.error("upstream_bad_event", "The upstream sent an event that is not valid JSON.")
                    )
                    await emit(b"".join(outs))
                    return False
                if splicer.errored:
                    report.problem = "upstream error event"
                    await emit(b"".join(outs))
                    return False
            if outs:
                await emit(b"".join(outs))
    except httpx2.HTTPError as exc:
        report.problem = "upstream stream cut"
        await emit(splicer.error("upstream_stream_cut", f"The upstream stream broke off: {reason_of(exc)}."))
        return False
    finally:
        await response.aclose()
    if not splicer.call_complete():
        report.problem = "upstream stream cut"
        await emit(splicer.error("upstream_stream_cut", "The upstream stream ended before its last event."))
        return False
    return True


def framed(emit: Emit, framing: Framing) -> Emit:
    """`emit` for the SSE bytes the gateway writes, in `framing` (itself for SSE)."""
    if framing is SSE:
        return emit

    async def framing_emit(sse: bytes) -> None:
        await emit(framing.frame(sse))

    return framing_emit


def _chunks(response: httpx2.Response) -> AsyncIterator[bytes]:
    """The upstream's bytes as they arrive: raw (no decoder, no re-chunking) when uncompressed, as the gateway asks
    for them (`Accept-Encoding: identity`); decoded if an upstream compresses anyway."""
    if response.headers.get("content-encoding", "identity").strip().lower() in ("", "identity"):
        return response.aiter_raw()
    return response.aiter_bytes()


async def relay_stream(turn: Turn, response: httpx2.Response, emit: Emit) -> None:
    """A stream with nothing to splice: forward the upstream's bytes as they arrive (SSE byte for byte; a framing
    whose cut frame could not be followed by another, as AWS event-stream, whole events only, framed again), read the
    usage on the side, and end with the API's error event if the upstream stops before its last event."""
    dialect, framing, report = turn.dialect, turn.framing, turn.exchange.report
    parser = framing.reader()
    usage: dict[str, Any] = {}
    complete = False
    try:
        async for chunk in _chunks(response):
            events = parser.feed(chunk)
            if framing.relays_bytes:
                await emit(chunk)
            elif events:
                await emit(framing.frame(b"".join(e.raw for e in events)))
            for event in events:
                try:
                    complete = dialect.usage_of_event(event, usage) or complete
                except (ValueError, AttributeError):
                    continue
    except httpx2.HTTPError as exc:
        report.problem = "upstream stream cut"
        cut = f"The upstream stream broke off: {reason_of(exc)}."
        await emit(framing.frame(dialect.splicer(frozenset()).error("upstream_stream_cut", cut)))
        return
    finally:
        await response.aclose()
        report.usage = usage
    if not complete:
        report.problem = "upstream stream cut"
        tail = b"\n\n" if parser.pending and framing.relays_bytes else b""
        error = dialect.splicer(frozenset()).error("upstream_stream_cut", "The upstream stream ended early.")
        await emit(framing.frame(tail + error))
