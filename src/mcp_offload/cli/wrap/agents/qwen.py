"""Qwen Code (`qwen`, npm `@qwen-code/qwen-code`, Node 22 or newer): OpenAI Chat Completions (or Responses),
Anthropic Messages or the Gemini API, by the auth type chosen (`--auth-type openai|openai-responses|anthropic|gemini`
or its settings). It reads each API's base-URL variable: `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`,
`GOOGLE_GEMINI_BASE_URL`; wrap sets all three and its keys stay the user's. A model of the user's settings
(`modelProviders`) with a `baseUrl` of its own keeps it. Its own `qwen-oauth` service is not one of these APIs and
is not routed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch


class QwenCode:
    name = "qwen"
    title = "Qwen Code"
    executable = "qwen"
    install = Install("npm", "@qwen-code/qwen-code")
    apis = (APIS["openai_chat"], APIS["responses"], APIS["anthropic"], APIS["gemini"])
    pointed_by = "OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL"
    knows = None  # variables only: any version

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        return Launch(env={name: value for api in self.apis for name, value in api.client_env(gateway).items()})


AGENT = QwenCode()
