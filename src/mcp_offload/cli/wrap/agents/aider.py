"""Aider (`aider`, PyPI `aider-chat`): OpenAI Chat Completions or Anthropic Messages, by the model chosen
(`openai/…`, `anthropic/…`), through LiteLLM, which reads `OPENAI_BASE_URL` before `OPENAI_API_BASE` and
`ANTHROPIC_API_BASE` before `ANTHROPIC_BASE_URL`: wrap sets all four, so a base of the user's in any of them (or in
`--openai-api-base`, which Aider puts into `OPENAI_API_BASE`) does not win over the gateway. Keys stay the user's.

Aider calls no tools: it sends the files it works on, and the output of `/run`, as message text, which the gateway
never changes (it rewrites tool results only). So the gateway saves nothing of those for Aider; it forwards the
requests unchanged (for Anthropic, with prompt-cache breakpoints added when Aider marks none), and its stats count
the session.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch


class Aider:
    name = "aider"
    title = "Aider"
    executable = "aider"
    install = Install("PyPI", "aider-chat")
    apis = (APIS["openai_chat"], APIS["anthropic"])
    pointed_by = "OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_API_BASE, ANTHROPIC_BASE_URL"
    knows = None  # variables only: any version

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        chat, anthropic = self.apis
        openai = chat.client_env(gateway)  # OPENAI_BASE_URL, the one LiteLLM reads first
        env = {**openai, "OPENAI_API_BASE": openai["OPENAI_BASE_URL"], "ANTHROPIC_API_BASE": gateway}
        return Launch(env={**env, **anthropic.client_env(gateway)})


AGENT = Aider()
