"""Any other agent, `wrap --api NAME -- CMD`: pointed by the variables a generic client of that LLM API reads for its
base URL, which the API's package declares (`LlmApi.client_env`: `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` with its
`/v1`, `GOOGLE_GEMINI_BASE_URL`). NAME is any API's name or alias (`apis.registry.api_named`: `openai` is Chat
Completions)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.base import LlmApi
from mcp_offload.cli.wrap.agents.base import Install, Launch, Versions


class AnyAgent:
    """An agent wrap does not know, run as `CMD` and pointed by its API's base-URL variables."""

    name = "any"
    install: Install | None = None
    knows: Versions | None = None

    def __init__(self, executable: str, api: LlmApi) -> None:
        self.executable = executable
        self.title = Path(executable).name
        self.apis: tuple[LlmApi, ...] = (api,)
        self.pointed_by = ", ".join(api.client_env("http://gateway"))

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        return Launch(env=self.apis[0].client_env(gateway))
