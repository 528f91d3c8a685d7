"""Claude Code (`claude`, npm `@anthropic-ai/claude-code`): Anthropic Messages, pointed by `ANTHROPIC_BASE_URL`. Its
API key (`ANTHROPIC_API_KEY`, or its login) stays the user's.

When the user's environment already selects a cloud, wrap keeps it: `CLAUDE_CODE_USE_BEDROCK` points Claude Code at
the gateway's Bedrock route by `ANTHROPIC_BEDROCK_BASE_URL` (the gateway re-signs what it sends with the same AWS
credentials, which it inherits from the same environment), `CLAUDE_CODE_USE_VERTEX` at its Vertex route by
`ANTHROPIC_VERTEX_BASE_URL` (the gateway's `/v1`; the OAuth token Claude Code gets passes through). Nothing else the
user set changes; a Bedrock or Vertex base URL the user had set becomes the gateway's upstream for the run. (Claude
Code 2.1.328's own table of these variables: `{endpoint: "ANTHROPIC_BEDROCK_BASE_URL", selection:
"CLAUDE_CODE_USE_BEDROCK"}`, `{endpoint: "ANTHROPIC_VERTEX_BASE_URL", selection: "CLAUDE_CODE_USE_VERTEX"}`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch

USE_BEDROCK, BEDROCK_BASE_URL = "CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL"
USE_VERTEX, VERTEX_BASE_URL = "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_BASE_URL"


def selects(environ: Mapping[str, str], name: str) -> bool:
    """Whether a Claude Code switch is on (it reads 1, true, yes, on)."""
    return environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def cloud(environ: Mapping[str, str]) -> str | None:
    """The cloud the user's environment selects for Claude Code (Bedrock first, as Claude Code checks it first)."""
    if selects(environ, USE_BEDROCK):
        return "bedrock"
    return "vertex" if selects(environ, USE_VERTEX) else None


class ClaudeCode:
    name = "claude"
    title = "Claude Code"
    executable = "claude"
    install = Install("npm", "@anthropic-ai/claude-code")
    apis = (APIS["anthropic"],)
    pointed_by = f"ANTHROPIC_BASE_URL ({BEDROCK_BASE_URL} with {USE_BEDROCK}, {VERTEX_BASE_URL} with {USE_VERTEX})"
    knows = None  # pointed by variables only: any version

    def upstreams(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The Bedrock or Vertex base URL the user set for Claude Code, as the gateway's upstream of that cloud."""
        selected = cloud(environ)
        if selected == "bedrock" and environ.get(BEDROCK_BASE_URL, "").strip():
            return {"bedrock_upstream": environ[BEDROCK_BASE_URL].strip().rstrip("/")}
        if selected == "vertex" and environ.get(VERTEX_BASE_URL, "").strip():  # it ends in /v1, the paths carry it
            return {"vertex_upstream": environ[VERTEX_BASE_URL].strip().rstrip("/").removesuffix("/v1")}
        return {}

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        selected = cloud(environ)
        if selected == "bedrock":
            return Launch(env={BEDROCK_BASE_URL: gateway})
        if selected == "vertex":
            return Launch(env={VERTEX_BASE_URL: gateway + "/v1"})
        return Launch(env=self.apis[0].client_env(gateway))


AGENT = ClaudeCode()
