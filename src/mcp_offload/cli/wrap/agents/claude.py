"""Claude Code (`claude`, npm `@anthropic-ai/claude-code`): Anthropic Messages, pointed by `ANTHROPIC_BASE_URL`. Its
API key (`ANTHROPIC_API_KEY`, or its login) stays the user's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch


class ClaudeCode:
    name = "claude"
    title = "Claude Code"
    executable = "claude"
    install = Install("npm", "@anthropic-ai/claude-code")
    apis = (APIS["anthropic"],)
    pointed_by = "ANTHROPIC_BASE_URL"
    knows = None  # pointed by a variable only: any version

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        return Launch(env=self.apis[0].client_env(gateway))


AGENT = ClaudeCode()
