"""How each coding agent is pointed at the gateway, for `mcp-offload wrap`: environment variables or command-line
overrides only, so no file of the user's is written.

- Claude Code (`claude`): `ANTHROPIC_BASE_URL`.
- Codex CLI (`codex`): `-c` overrides declaring a provider (`model_provider` and `model_providers.mcp-offload.*`:
  base_url, wire_api = responses, env_key = OPENAI_API_KEY) before its other arguments. `OPENAI_BASE_URL` alone is
  not enough: Codex 0.169 first opens a WebSocket to the public host.
- Gemini CLI (`gemini`): `GOOGLE_GEMINI_BASE_URL`, and `GEMINI_CLI_HOME` when its settings select no auth type
  (gemini_home.py: a home of mcp-offload's own selecting `gemini-api-key`, never a write into `~/.gemini`). Its API
  key stays the user's `GEMINI_API_KEY`.
- Any other agent taking one of the base-URL variables: `--api NAME`, any LLM API's name or alias; the variables
  are the API's own (`LlmApi.client_env`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.registry import api_named

PROVIDER = "mcp-offload"  # the Codex provider the overrides declare


@dataclass(frozen=True, slots=True)
class Agent:
    name: str  # what the user types after `wrap`
    api: LlmApi
    executable: str


AGENTS: dict[str, Agent] = {
    a.name: a
    for a in (
        Agent("claude", api_named("anthropic"), "claude"),
        Agent("codex", api_named("responses"), "codex"),
        Agent("gemini", api_named("gemini"), "gemini"),
    )
}


@dataclass(frozen=True, slots=True)
class Launch:
    """What to run: the command line and the variables to add to the environment."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def base_env(api: LlmApi, gateway: str, gemini_home: Path | None) -> dict[str, str]:
    """The variables that point a client of `api` at the gateway (`gateway`: http://host:port, no path): the API's
    own (`client_env`), and Gemini CLI's home when it needs one of ours."""
    env = api.client_env(gateway)
    if gemini_home is not None:
        env["GEMINI_CLI_HOME"] = str(gemini_home)
    return env


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


def launch(agent: Agent | None, api: LlmApi, argv: list[str], gateway: str, gemini_home: Path | None) -> Launch:
    """The agent's command line (`argv`: its executable then its own arguments) pointed at `gateway`."""
    if agent is not None and agent.name == "codex":
        return Launch([argv[0], *codex_overrides(gateway), *argv[1:]], {})
    return Launch(list(argv), base_env(api, gateway, gemini_home))
