"""How much of one answer a client shows its model whole: a cap in bytes and/or tokens, and its written form.

Clients cut tool results their own way (Codex keeps a head and a tail around `…N tokens truncated…`, Claude Code
saves a large result to a file and shows a 2 KB preview): an exact slice cut so arrives with a hole in it. An
`AnswerCap` is the size an answer must stay within for the client to show it whole; the MCP tools fit every answer
to the caller's cap and end a cut one with the exact call that continues it (`core/fit.py`).

Caps are written `NAME=SIZE` pairs, comma-separated (`settings.client_caps`, env `MCP_OFFLOAD_CLIENT_CAPS`, flag
`--client-caps`): NAME is a client's MCP clientInfo name, or `*` for every client not named; SIZE is bytes
(`10000`, `10KB`, `9.5KiB`) or tokens (`25000tokens`), and `SIZE+SIZE` gives both (`48KB+25000tokens`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mcp_offload.errors import SettingsError
from mcp_offload.tokens import TokenCounter
from mcp_offload.units import parse_size

# The smallest useful answer: a search hit (its line is cut to `search_line_chars`, 300 characters, up to 1,200
# bytes of UTF-8) with its header and the call that continues it, or a read's header, a few lines and its
# continuation. A cap below these cannot carry one exact piece plus the way on, and is refused at start.
MIN_CAP_BYTES = 2_000
MIN_CAP_TOKENS = 500
ANY_CLIENT = "*"


@dataclass(frozen=True, slots=True)
class AnswerCap:
    """At most `max_bytes` bytes of UTF-8, at most `max_tokens` tokens and at most `max_lines` lines (None: no such
    limit; a line is what a newline ends or the text's last piece: `text.count("\n") + 1`)."""

    max_bytes: int | None = None
    max_tokens: int | None = None
    whose: str = "this client's"  # for the model: "[cut at Codex's 10,000-byte cap: …]"
    # the client shows its model the whole result as JSON (Cline): the text is measured as a JSON string (a newline,
    # a quote or a backslash counts twice), and the result model is not put in the result's `_meta` (the model would
    # read it too)
    raw_json: bool = False
    max_lines: int | None = None  # opencode keeps the first 2,000 lines and saves the whole to a file
    # the client shows its model a result's resource link as text of its own ("[Resource link: NAME] URI" in Claude
    # Code): where the reply already names the handle, the proxy adds no link (it would be paid for on every turn)
    resource_links: bool = True

    @property
    def limited(self) -> bool:
        return self.max_bytes is not None or self.max_tokens is not None or self.max_lines is not None

    def excess_bytes(self, text: str, counter: TokenCounter) -> int:
        """By about how many bytes `text` is over the cap (0: it fits). Tokens over are counted as 4 bytes each
        (plus one), lines over as the text's mean line length each (plus one), which converges on a fit in a few
        rounds."""
        over = 0
        if self.max_bytes is not None:
            shown = json.dumps(text, ensure_ascii=False)[1:-1] if self.raw_json else text
            over = max(over, len(shown.encode("utf-8", "surrogatepass")) - self.max_bytes)
        if self.max_tokens is not None:
            tokens = counter.count(text)
            if tokens > self.max_tokens:
                over = max(over, (tokens - self.max_tokens) * 4 + 1)
        if self.max_lines is not None:
            lines = text.count("\n") + 1
            if lines > self.max_lines:
                size = len(text.encode("utf-8", "surrogatepass"))
                over = max(over, (lines - self.max_lines) * -(-size // lines) + 1)
        return over

    def fits(self, text: str, counter: TokenCounter) -> bool:
        return self.excess_bytes(text, counter) == 0

    def describe(self) -> str:
        """'10,000-byte', '25,000-token', '48,000-byte / 25,000-token'."""
        parts = []
        if self.max_bytes is not None:
            parts.append(f"{self.max_bytes:,}-byte")
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,}-token")
        if self.max_lines is not None:
            parts.append(f"{self.max_lines:,}-line")
        return " / ".join(parts) or "unlimited"

    def label(self) -> str:
        """'Codex's 10,000-byte cap': how a cut answer names the cap it was cut at."""
        return f"{self.whose} {self.describe()} cap"


UNCAPPED = AnswerCap()

_TOKENS = re.compile(r"^\s*(\d[\d_,]*)\s*(?:t|tok|tokens?)\s*$", re.IGNORECASE)


def parse_cap(text: str, *, whose: str = "this client's") -> AnswerCap:
    """`10KB`, `10000`, `25000tokens`, `48KB+25000tokens`; ValueError saying what is wrong."""
    max_bytes = max_tokens = None
    for part in text.split("+"):
        tokens = _TOKENS.match(part)
        if tokens:
            if max_tokens is not None:
                raise ValueError(f"{text!r} gives tokens twice")
            max_tokens = int(tokens.group(1).replace(",", "").replace("_", ""))
            continue
        if max_bytes is not None:
            raise ValueError(f"{text!r} gives bytes twice")
        max_bytes = parse_size(part.strip())
    if max_bytes is not None and max_bytes < MIN_CAP_BYTES:
        raise ValueError(f"{max_bytes:,} bytes is below the smallest useful answer ({MIN_CAP_BYTES:,} bytes)")
    if max_tokens is not None and max_tokens < MIN_CAP_TOKENS:
        raise ValueError(f"{max_tokens:,} tokens is below the smallest useful answer ({MIN_CAP_TOKENS:,} tokens)")
    return AnswerCap(max_bytes, max_tokens, whose)


def parse_client_caps(spec: str) -> dict[str, AnswerCap]:
    """`codex-mcp-client=10KB,my-agent=25000tokens,*=50KB` → {client name: cap}; `SettingsError` (one line, at
    start) for a malformed entry or a cap below the smallest useful answer."""
    caps: dict[str, AnswerCap] = {}
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        name, sep, size = entry.partition("=")
        name = name.strip()
        if not sep or not name or not size.strip():
            raise SettingsError(
                f"client caps: {entry!r} is not NAME=SIZE (e.g. codex-mcp-client=10KB, my-agent=25000tokens, *=50KB)"
            )
        try:
            caps[name] = parse_cap(size, whose="this client's" if name == ANY_CLIENT else f"{name}'s")
        except ValueError as exc:
            raise SettingsError(f"client caps: {name}: {exc}") from None
    return caps
