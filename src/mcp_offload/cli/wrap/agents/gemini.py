"""Gemini CLI (`gemini`, npm `@google/gemini-cli`): the Gemini API, pointed by `GOOGLE_GEMINI_BASE_URL`, and by
`GEMINI_CLI_HOME` when its settings select no auth type; never a write into the user's `~/.gemini`. Its API key stays
the user's `GEMINI_API_KEY`.

With `GOOGLE_GEMINI_BASE_URL` set and no auth type selected in its settings, Gemini CLI 0.61 picks a "gateway" auth
type and refuses to run headless ("Invalid auth method selected", exit 41). No environment variable selects the
type, and the settings layers a variable can point elsewhere (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`,
`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`) are skipped unless the file and every directory above it are owned by root and
writable by no one else. What it does honour is `GEMINI_CLI_HOME`, the directory holding `.gemini`.

So when the user's settings select no auth type, wrap points `GEMINI_CLI_HOME` at a home of mcp-offload's own whose
`.gemini` holds a copy of the user's `settings.json` with `security.auth.selectedType = "gemini-api-key"` added, and a
symbolic link to every other entry of the user's `~/.gemini` (history, memory, extensions, credentials), refreshed on
each run. When the user's settings select a type already, nothing is needed and their home is used as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, link_entries, users_dir, write_if_changed
from mcp_offload.errors import OperatorError

SETTINGS = "settings.json"
AUTH = {"security": {"auth": {"selectedType": "gemini-api-key"}}}


def user_gemini_dir(environ: Mapping[str, str], own: Path) -> Path:
    default = Path(environ.get("HOME") or Path.home())
    return users_dir(environ.get("GEMINI_CLI_HOME"), default, own) / ".gemini"


def selects_auth(settings: dict[str, Any]) -> bool:
    security = settings.get("security")
    auth = security.get("auth") if isinstance(security, dict) else None
    return isinstance(auth, dict) and bool(auth.get("selectedType"))


def read_settings(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise OperatorError(
            f'cannot read {path} as JSON; set security.auth.selectedType to "gemini-api-key" there, or run Gemini '
            "CLI without wrap"
        ) from None
    if not isinstance(settings, dict):
        raise OperatorError(f"{path} is not a JSON object")
    return settings


def gemini_home(own: Path, environ: Mapping[str, str]) -> Path | None:
    """The `GEMINI_CLI_HOME` for a wrapped Gemini CLI: None when the user's settings select an auth type already,
    else `own` (created or refreshed as the module docstring says; nothing in the user's `~/.gemini` is written)."""
    user = user_gemini_dir(environ, own)
    settings = read_settings(user / SETTINGS)
    if selects_auth(settings):
        return None
    mirror = own / ".gemini"
    link_entries(user, mirror, except_name=SETTINGS)
    merged = {**settings, "security": {**settings.get("security", {}), **AUTH["security"]}}
    merged["security"]["auth"] = {**settings.get("security", {}).get("auth", {}), **AUTH["security"]["auth"]}
    write_if_changed(mirror / SETTINGS, json.dumps(merged, indent=2) + "\n")
    return own


class GeminiCli:
    name = "gemini"
    title = "Gemini CLI"
    executable = "gemini"
    install = Install("npm", "@google/gemini-cli")
    apis = (APIS["gemini"],)
    pointed_by = "GOOGLE_GEMINI_BASE_URL; GEMINI_CLI_HOME when its settings select no auth"
    knows = None

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        env = self.apis[0].client_env(gateway)
        home = gemini_home(data_dir / "gemini-cli", environ)
        if home is None:
            return Launch(env=env)
        return Launch(env={**env, "GEMINI_CLI_HOME": str(home)}, files=[home / ".gemini" / SETTINGS])


AGENT = GeminiCli()
