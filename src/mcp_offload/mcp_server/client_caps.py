"""Which cap an MCP request's answers must fit: the calling client's, known by its clientInfo name.

The client says who it is in its `initialize` request (handshake era) or in each request's `_meta` envelope
(2026-07-28, where it is optional); the SDK gives both as `ctx.session.client_params.client_info`. Built-in caps,
measured or documented, with room below each client's own cut:

- `codex-mcp-client`, Codex CLI (0.169.0): keeps a head and a tail around `…N tokens truncated…` past ~12,000 bytes
  for a model it has no metadata for (measured: 11,988 bytes shown). Cap: 10,000 bytes.
- `claude-code`, Claude Code (2.1.328): saves a result over 50,000 characters to a file and shows the model a 2 KB
  preview, and cuts one over 25,000 tokens (both measured), unless the tool declares a size hint in its `_meta`
  (`anthropic/maxResultSizeChars`, read from 2.1.328's bundle: a result of up to that many characters, at most 500,000,
  stays inline, and the token cut is skipped). Ours declare RESULT_SIZE_HINT_CHARS (`TOOL_META`, tools.tool_of), so
  from 2.1.328 on (clientInfo version) the cap is 95,000 bytes (a byte is never fewer than a UTF-16 code unit, which
  Claude Code counts): measured, a 98 KB answer stays inline. Before 2.1.328: 48,000 bytes and 25,000 tokens. It
  shows its model a resource link as `[Resource link: NAME] URI` (about 47 tokens for one stored output, measured),
  which the proxy's reply already says by its handle: the proxy adds no link for it (`AnswerCap.resource_links`).
- `gemini-cli-mcp-client`, Gemini CLI (0.61.0, handshake protocol 2025-06-18): keeps the first 8,000 and last 32,000
  characters of a result over 40,000 and saves the whole to a file (measured). Cap: 38,000 bytes.
- `copilot-cli`, GitHub Copilot CLI (1.0.102, which probes `server/discover` and then opens the 2025-11-25 handshake:
  serve/stdio_eras.py): replaces a result over 20,480 characters by a notice that it saved it to a file under /tmp and
  a 500-character preview (measured: 20,480 shown whole, 20,481 saved away). Cap: 20,000 bytes (a byte is never
  fewer than a character).

- `@cline/core`, Cline (3.0.65, handshake protocol 2024-11-05): shows its model the whole `CallToolResult` as JSON
  (`_meta` included, the text escaped) and cuts it to 8,000 characters from the middle (`...[truncated N chars]...`,
  measured). Cap: 7,500 bytes of the text as a JSON string, and no result model in `_meta`
  (`AnswerCap.raw_json`).
- `openclaw-bundle-mcp`, OpenClaw (2026.9.6, handshake protocol 2025-11-25): its tool bridge (`tool_call`) shows its
  model the call's tool and result as indented JSON, inside an "external, untrusted content" notice, and cuts that JSON
  at about 20,000 characters with `[truncated]` (measured: a 19,900-character answer was cut). Cap: 19,000 bytes of
  the text as a JSON string, and no result model in `_meta` (`AnswerCap.raw_json`).
- `opencode`, opencode (1.18.33, handshake protocol 2025-11-25): keeps the first 2,000 lines or 51,200 bytes of a
  result and saves the whole to a file (measured: 51,200 bytes and 2,000 lines shown whole, one more of either cut).
  Cap: 50,000 bytes and 2,000 lines (counted as newlines plus one, so a final newline costs a line).
- `qwen-cli-mcp-client-<server name>`, Qwen Code (0.24.4; the name carries the name the user gave the server, so it is
  matched by its prefix): its scheduler saves a result over 28,000 characters (its `tools.truncateToolOutputThreshold`,
  25,000, plus 3,000) to a file and shows the model a 2,000-character preview in `<persisted-output>` (measured through
  its `tool_call` bridge: 28,000 characters shown whole, 29,9xx saved away), although it declares a 500,000-character
  budget for MCP tools. Cap: 25,000 bytes.

No other client here reads a size hint from a tool's `_meta` (searched in Codex, Gemini CLI, opencode, Copilot CLI,
Cline, OpenClaw and Qwen Code).

Every other client keeps the server's own limits (`read_max_tokens`, `max_results`, `jq_max_output_chars`). The
`client_caps` setting (`MCP_OFFLOAD_CLIENT_CAPS`, `--client-caps`, `answer_cap.parse_client_caps`) sets or replaces
the cap of any client by name, and `*` that of every client it does not name.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from mcp_offload.core.answer_cap import ANY_CLIENT, UNCAPPED, AnswerCap, parse_client_caps

# The size hint every tool carries in its `_meta` for the clients that read one (Claude Code: above)
RESULT_SIZE_HINT_CHARS = 100_000
TOOL_META: dict[str, Any] = {"anthropic/maxResultSizeChars": RESULT_SIZE_HINT_CHARS}

KNOWN_CLIENTS: dict[str, AnswerCap] = {
    "codex-mcp-client": AnswerCap(max_bytes=10_000, whose="Codex's"),
    "claude-code": AnswerCap(max_bytes=48_000, max_tokens=25_000, whose="Claude Code's", resource_links=False),
    "gemini-cli-mcp-client": AnswerCap(max_bytes=38_000, whose="Gemini CLI's"),
    "copilot-cli": AnswerCap(max_bytes=20_000, whose="Copilot CLI's"),
    "@cline/core": AnswerCap(max_bytes=7_500, whose="Cline's", raw_json=True),
    "openclaw-bundle-mcp": AnswerCap(max_bytes=19_000, whose="OpenClaw's", raw_json=True),
    "opencode": AnswerCap(max_bytes=50_000, max_lines=2_000, whose="opencode's"),
}
# clients whose cap changed with a version (clientInfo version): from that version on, this cap
FROM_VERSION: dict[str, tuple[tuple[int, ...], AnswerCap]] = {
    # reads TOOL_META's hint
    "claude-code": ((2, 1, 328), AnswerCap(max_bytes=95_000, whose="Claude Code's", resource_links=False)),
}
# clients whose clientInfo name carries more than the client (Qwen Code adds the server's name): matched by prefix
KNOWN_PREFIXES: dict[str, AnswerCap] = {
    "qwen-cli-mcp-client-": AnswerCap(max_bytes=25_000, whose="Qwen Code's"),
}


class ClientCaps:
    """The caps in force: the built-in ones, overridden and extended by the `client_caps` setting."""

    def __init__(self, spec: str = "") -> None:
        configured = parse_client_caps(spec)  # SettingsError (at start) for a bad or too small cap
        for name, cap in configured.items():  # a size set for a known client keeps how that client shows results
            if name in KNOWN_CLIENTS:
                known = KNOWN_CLIENTS[name]
                configured[name] = replace(cap, raw_json=known.raw_json, resource_links=known.resource_links)
        self.default = configured.pop(ANY_CLIENT, UNCAPPED)
        self.by_name = {**KNOWN_CLIENTS, **configured}

    def for_client(self, name: str | None, version: str | None = None) -> AnswerCap:
        if name is None:
            return self.default
        later = FROM_VERSION.get(name)
        if later is not None and self.by_name.get(name) is KNOWN_CLIENTS.get(name):  # a set cap wins
            since, cap = later
            if version_of(version) >= since:
                return cap
        found = self.by_name.get(name)
        if found is not None:
            return found
        # a name the setting gives exactly wins (above); else a built-in prefix
        return next((cap for prefix, cap in KNOWN_PREFIXES.items() if name.startswith(prefix)), self.default)

    def for_request(self, ctx: Any) -> AnswerCap:
        """The cap of the client making this request (a `ServerRequestContext`; both protocol eras)."""
        params = getattr(ctx.session, "client_params", None)
        info = getattr(params, "client_info", None)
        return self.for_client(getattr(info, "name", None), getattr(info, "version", None))


def version_of(text: str | None) -> tuple[int, ...]:
    """A clientInfo version as numbers (`2.1.328` -> (2, 1, 328)); () when it has none."""
    found = re.match(r"\s*v?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(part) for part in found[1].split(".")) if found else ()
