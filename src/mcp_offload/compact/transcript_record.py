"""Step 3 of the budget (budget.py), recorded: older turns go into one stored transcript, and its note is recorded
(sticky, the first one wins) under the digest of those turns, so every later call puts back the same bytes, like
any other decision."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence

from mcp_offload.cachesafe.record import open_record
from mcp_offload.compact.boundary import Boundary
from mcp_offload.compact.request import CompactReport, CompactRequest, StepContext
from mcp_offload.compact.transcript import Summarize, note_text, readable_text, run_summarize, transcript_text
from mcp_offload.errors import StoreError

# the word a digest of older turns starts with: the API's name, except Chat Completions' digests, first made when
# its word was "openai" and kept so that transcripts recorded then are found (a different digest would summarise
# the same turns again and change the already-sent bytes)
_DIGEST_WORDS = {"openai_chat": "openai"}

log = logging.getLogger("mcp_offload.compact")


async def transcript_step(
    ctx: StepContext,
    request: CompactRequest,
    bound: Boundary,
    total: int,
    summarize: Summarize | None,
    report: CompactReport,
) -> int:
    """Step 3: older turns into one stored transcript, the note recorded (sticky) under their digest."""
    older = bound.older_turns([k.view for k in request.known])
    if len(older) < 2:
        return total
    first, last = older.start, older.stop - 1
    label = f"transcript of messages {first}-{last}"
    try:
        stored = await ctx.offload_text(transcript_text(request.messages[first : last + 1]), label)
    except Exception as exc:
        ctx.warn(report, f"could not store the {label} ({type(exc).__name__}: {exc}); those turns stay inline")
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
        held = await open_record(ctx.services).add_transcript(
            ctx.core_session, _turns_digest(request, first, last + 1), json.dumps({"note": note})
        )
        note = json.loads(held)["note"]
    except StoreError as exc:
        ctx.warn(report, f"could not record the {label} ({type(exc).__name__}: {exc}); used it once")
    report.transcript = stored.handle
    before = sum(request.tokens(i) for i in range(first, last + 2))
    _put_note(request, first, last, note)
    return total - before + request.tokens(first)


async def recorded_transcripts(
    ctx: StepContext, request: CompactRequest, bound: Boundary, report: CompactReport
) -> None:
    """Put back the transcript notes an earlier call recorded for these older turns (the longest one first,
    then any recorded over its result): a transcript, once taken, is sent as the same bytes on every later
    call, like any other decision."""
    record = open_record(ctx.services)
    while True:
        views = [k.view for k in request.known]
        older = bound.older_turns(views)
        if len(older) < 2:
            return
        first = older.start
        digests = _turns_digests(request, first, [j for j in range(first + 2, older.stop + 1) if views[j].opens_turn])
        try:
            found = await record.transcripts(ctx.core_session, list(digests))
        except StoreError as exc:
            ctx.warn(report, f"could not read the decision record ({type(exc).__name__}: {exc})")
            return
        if not found:
            return
        digest = max(found, key=digests.__getitem__)
        try:
            note = json.loads(found[digest])["note"]
        except (ValueError, KeyError, TypeError):
            return
        _put_note(request, first, digests[digest] - 1, str(note))


def _put_note(request: CompactRequest, first: int, last: int, note: str) -> None:
    """Messages `first`..`last` out; the note joins the user message that opens the next turn (older_turns ends
    at one): no two user messages in a row, which the Anthropic API refuses."""
    merged = request.api.messages.prepend_note(request.messages[last + 1], note)
    request.messages[first : last + 2] = [merged]
    request.known[first : last + 2] = [request.memo.known(request.api, merged, first)]


def _turns_digest(request: CompactRequest, start: int, stop: int) -> str:
    """The key of the older turns `start`..`stop - 1`: where they start and what they hold."""
    return next(iter(_turns_digests(request, start, [stop])))


def _turns_digests(request: CompactRequest, start: int, stops: Sequence[int]) -> dict[str, int]:
    """`_turns_digest(request, start, stop)` -> stop, for each of the ascending `stops`, in one pass."""
    h = hashlib.sha256(f"{_DIGEST_WORDS.get(request.api.name, request.api.name)}:{start}:".encode())
    at, out = start, {}
    for stop in stops:
        for known in request.known[at:stop]:
            h.update(known.key)
        at = stop
        out[h.hexdigest()] = stop
    return out
