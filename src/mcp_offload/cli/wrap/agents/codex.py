"""Codex CLI (`codex`, npm `@openai/codex`): OpenAI Responses, pointed by `-c` overrides put before the user's own
arguments, declaring a model provider (`model_provider` and `model_providers.mcp-offload.*`: base_url, wire_api =
responses, env_key = OPENAI_API_KEY). `OPENAI_BASE_URL` alone is not enough: Codex 0.169 first opens a WebSocket to
the public host. Nothing is written into `~/.codex`; the user's `OPENAI_API_KEY` is the provider's key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch

PROVIDER = "mcp-offload"  # the provider the overrides declare


def codex_overrides(gateway: str) -> list[str]:
    """Codex's `-c key=value` overrides (values in TOML) declaring the gateway as its model provider."""
    provider = f"model_providers.{PROVIDER}"
    values = {
        "model_provider": PROVIDER,
        f"{provider}.name": PROVIDER,
        f"{provider}.base_url": gateway + "/v1",
        f"{provider}.wire_api": "responses",
        f"{provider}.env_key": "OPENAI_API_KEY",
    }
    return [arg for key, value in values.items() for arg in ("-c", f"{key}={json.dumps(value)}")]


class CodexCli:
    name = "codex"
    title = "Codex CLI"
    executable = "codex"
    install = Install("npm", "@openai/codex")
    apis = (APIS["responses"],)
    pointed_by = "-c overrides declaring a model provider"
    knows = None  # `-c` and `model_providers` are the same across its versions

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        return Launch(args=codex_overrides(gateway))


AGENT = CodexCli()
