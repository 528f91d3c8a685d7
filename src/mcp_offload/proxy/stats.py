"""Savings accounting, per session: tokens the proxy kept out of the context, and tokens the model spent pulling
content back with the retrieval tools. Both sides are shown, so the figure a user sees is the net saving.

- kept out = the full size of every offloaded result (as the client would have received it) minus the reference
  the model got instead;
- pulled back = the text of every read / search / query result in the session (whichever output it came from:
  counting reads of manually offloaded outputs too understates the saving rather than flattering it);
- passed by handle = stored outputs an upstream tool got as `offload://outputs/<handle>` arguments (the proxy put the
  content in, proxy/handle_arguments.py): their tokens minus the URIs', the content the model did not have to write
  into its calls. Counted for calls the upstream carried out (not for errors).

Net saving = kept out + passed by handle - pulled back.

Kept in memory (a proxy process is one run); bounded by evicting the oldest sessions.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from mcp_offload.proxy.policy import ResultHandling

MAX_SESSIONS = 10_000
__all__ = ["PassedByHandle", "SavingsStats", "SessionSavings"]


@dataclass(frozen=True, slots=True)
class PassedByHandle:
    """The stored outputs one upstream call got as arguments: how many, and the tokens they kept out of the call."""

    arguments: int = 0
    tokens: int = 0  # the outputs' tokens minus the tokens of the URIs the model wrote instead


@dataclass(slots=True)
class SessionSavings:
    results_passed: int = 0
    results_offloaded: int = 0
    tokens_offloaded: int = 0  # full size of what was stored instead of shown
    tokens_references: int = 0  # the references shown instead
    tokens_estimated: bool = False  # some output was too large to count exactly
    retrievals: int = 0
    tokens_retrieved: int = 0
    arguments_by_handle: int = 0
    tokens_passed_by_handle: int = 0

    @property
    def tokens_kept_out(self) -> int:
        return self.tokens_offloaded - self.tokens_references

    @property
    def tokens_net(self) -> int:
        return self.tokens_kept_out + self.tokens_passed_by_handle - self.tokens_retrieved

    def as_dict(self) -> dict[str, int | bool]:
        return {
            "results_passed_through": self.results_passed,
            "results_offloaded": self.results_offloaded,
            "tokens_offloaded": self.tokens_offloaded,
            "tokens_in_references": self.tokens_references,
            "tokens_kept_out": self.tokens_kept_out,
            "retrievals": self.retrievals,
            "tokens_retrieved": self.tokens_retrieved,
            "arguments_by_handle": self.arguments_by_handle,
            "tokens_passed_by_handle": self.tokens_passed_by_handle,
            "tokens_net_saving": self.tokens_net,
            "tokens_estimated": self.tokens_estimated,
        }


class SavingsStats:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._sessions: OrderedDict[str, SessionSavings] = OrderedDict()
        self._max = max_sessions

    def session(self, scope: str) -> SessionSavings:
        entry = self._sessions.get(scope)
        if entry is None:
            entry = self._sessions[scope] = SessionSavings()
            while len(self._sessions) > self._max:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(scope)
        return entry

    def record_result(self, scope: str, decision: ResultHandling) -> None:
        entry = self.session(scope)
        if not decision.offloaded:
            entry.results_passed += 1
            return
        entry.results_offloaded += 1
        entry.tokens_offloaded += decision.tokens_original
        entry.tokens_references += decision.tokens_reply
        entry.tokens_estimated |= decision.tokens_estimated

    def record_retrieval(self, scope: str, tokens: int) -> None:
        entry = self.session(scope)
        entry.retrievals += 1
        entry.tokens_retrieved += tokens

    def record_passed(self, scope: str, passed: PassedByHandle) -> None:
        if not passed.arguments:
            return
        entry = self.session(scope)
        entry.arguments_by_handle += passed.arguments
        entry.tokens_passed_by_handle += passed.tokens

    def render(self, scope: str) -> str:
        s = self.session(scope)
        approx = "~" if s.tokens_estimated else ""
        by_handle = (
            f"Passed to tools by handle: {s.arguments_by_handle} stored output(s), {s.tokens_passed_by_handle:,} "
            "tokens the calls did not carry. "
            if s.arguments_by_handle
            else ""
        )
        return (
            f"This session: {s.results_offloaded} upstream result(s) offloaded, {s.results_passed} passed through. "
            f"Kept out of context: {approx}{s.tokens_kept_out:,} tokens ({approx}{s.tokens_offloaded:,} stored, "
            f"{s.tokens_references:,} spent on references). {by_handle}Pulled back by {s.retrievals} "
            f"read/search/query call(s): {s.tokens_retrieved:,} tokens. Net saving: {approx}{s.tokens_net:,} tokens."
        )
