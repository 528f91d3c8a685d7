"""pi (`pi`, npm `@mariozechner/pi-coding-agent`): Anthropic Messages, OpenAI Responses or the Gemini API, by the
model chosen. pi reads its providers from `models.json` in its agent directory (`PI_CODING_AGENT_DIR`, default
`~/.pi/agent`), where an entry naming a built-in provider with only a `baseUrl` routes all of that provider's models
through another endpoint, keeping the user's key or login.

wrap points `PI_CODING_AGENT_DIR` at a directory of mcp-offload's own holding a copy of the user's `models.json` with
`baseUrl` set for the built-in `anthropic`, `openai` and `google` providers, and a symbolic link to every other entry
of the user's agent directory (settings, auth, extensions, themes), refreshed on each run; sessions stay in the
user's session directory (`PI_CODING_AGENT_SESSION_DIR`). Nothing in the user's agent directory is written. Its own
providers (a local model server, a proxy of the user's) keep their endpoints.

The override-only provider entry keeps the built-in models from pi 0.70.3 on, and `PI_CODING_AGENT_SESSION_DIR` came
in 0.71.0: wrap knows 0.71.0 up to 1.0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import (
    Install,
    Launch,
    Versions,
    link_entries,
    read_json_object,
    users_dir,
    write_if_changed,
)

MODELS = "models.json"
# pi's built-in provider -> the path its baseUrl carries after the host (as in pi's own model catalog)
PROVIDERS = {"anthropic": "", "openai": "/v1", "google": "/v1beta"}


def user_agent_dir(environ: Mapping[str, str], own: Path) -> Path:
    default = Path(environ.get("HOME") or Path.home()) / ".pi" / "agent"
    return users_dir(environ.get("PI_CODING_AGENT_DIR"), default, own)


def pointed_models(models: dict[str, Any], gateway: str) -> dict[str, Any]:
    """The user's `models.json` with the built-in providers' `baseUrl` at the gateway."""
    providers = models.get("providers")
    providers = dict(providers) if isinstance(providers, dict) else {}
    for provider, path in PROVIDERS.items():
        own = providers.get(provider)
        providers[provider] = {**(own if isinstance(own, dict) else {}), "baseUrl": gateway + path}
    return {**models, "providers": providers}


class Pi:
    name = "pi"
    title = "pi"
    executable = "pi"
    install = Install("npm", "@mariozechner/pi-coding-agent")
    apis = (APIS["anthropic"], APIS["responses"], APIS["gemini"])
    pointed_by = "PI_CODING_AGENT_DIR: its models.json with the built-in providers' baseUrl"
    knows = Versions((0, 71, 0), (1, 0, 0), "0.73.1")

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        own = data_dir / "pi" / "agent"
        user = user_agent_dir(environ, own)
        models = read_json_object(
            user / MODELS, "wrap reads it as plain JSON (no comments, no trailing commas), or run pi without wrap"
        )
        link_entries(user, own, except_name=MODELS)
        write_if_changed(own / MODELS, json.dumps(pointed_models(models, gateway), indent=2) + "\n")
        sessions = environ.get("PI_CODING_AGENT_SESSION_DIR") or str(user / "sessions")  # pi's default there
        env = {"PI_CODING_AGENT_DIR": str(own), "PI_CODING_AGENT_SESSION_DIR": sessions}
        return Launch(env=env, files=[own / MODELS])


AGENT = Pi()
