"""Cline (`cline`, npm `cline`): pointed by `CLINE_PROVIDER_SETTINGS_PATH`, the variable naming its provider settings
file, at a copy of the user's `providers.json` (format version 1) that wrap writes under mcp-offload's own data
directory, the provider in use given the gateway's `/v1` as its `baseUrl`. Cline has no run-time base-URL flag or
variable, and everything else it keeps (sessions, MCP and global settings, the user's file itself) stays where it is.

The provider in use is the file's `lastUsedProvider`. Only Cline's `openai-compatible` provider (Chat Completions; the
one tested with the real Cline) is pointed; any other is refused in one line rather than guessed at, and the copy
holds that provider alone (a `--provider` naming another on the command line finds no settings there, instead of
going around the gateway). Its API key stays the user's: the copy carries it as the user's file does
(written readable by the user only), and a `baseUrl` the user set becomes the upstream of a gateway started for the
run, so the requests still end up where they went without wrap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, WrapError

POINTED = "openai-compatible"
FORMAT_VERSION = 1
VARIABLE = "CLINE_PROVIDER_SETTINGS_PATH"


def user_settings_path(environ: Mapping[str, str]) -> Path:
    """Where Cline reads its provider settings without wrap (its own lookup order)."""
    if environ.get(VARIABLE, "").strip():
        return Path(environ[VARIABLE].strip())
    if environ.get("CLINE_DATA_DIR", "").strip():
        return Path(environ["CLINE_DATA_DIR"].strip()) / "settings" / "providers.json"
    root = Path(environ["CLINE_DIR"].strip()) if environ.get("CLINE_DIR", "").strip() else Path.home() / ".cline"
    return root / "data" / "settings" / "providers.json"


def read_settings(path: Path) -> dict[str, Any]:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WrapError(
            f"Cline has no provider settings ({path}): configure one first, e.g. `cline auth -p {POINTED} -k KEY "
            "-m MODEL -b URL`"
        ) from None
    except (OSError, ValueError) as exc:
        raise WrapError(f"cannot read Cline's provider settings {path}: {exc}") from None
    if not isinstance(settings, dict) or settings.get("version") != FORMAT_VERSION:
        raise WrapError(
            f"{path} is not Cline's provider settings format version {FORMAT_VERSION}, the one wrap knows: point "
            "Cline yourself"
        )
    return settings


class Cline:
    name = "cline"
    title = "Cline"
    executable = "cline"
    install = Install("npm", "cline")
    apis = (APIS["openai_chat"],)
    pointed_by = "CLINE_PROVIDER_SETTINGS_PATH: a copy of its providers.json with the gateway as baseUrl"
    knows = None  # the settings file's own format version is checked instead

    def _pointed(self, environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the user's settings, the settings of the provider in use): refused unless it is one wrap points."""
        settings = read_settings(user_settings_path(environ))
        provider = str(settings.get("lastUsedProvider") or "")
        entry = (settings.get("providers") or {}).get(provider)
        if provider != POINTED or not isinstance(entry, dict) or not isinstance(entry.get("settings"), dict):
            raise WrapError(
                f"wrap points Cline's {POINTED} provider only (Chat Completions: the one tested); the provider in use "
                f"is {provider[:60]!r}: configure it with `cline auth -p {POINTED} …`"
            )
        return settings, entry["settings"]

    def upstreams(self, environ: Mapping[str, str]) -> dict[str, str]:
        _, provider = self._pointed(environ)
        url = str(provider.get("baseUrl") or "").strip()
        return {"openai_upstream": url.rstrip("/")} if url else {}

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        settings, provider = self._pointed(environ)
        entry = settings["providers"][POINTED]
        pointed = {**settings, "lastUsedProvider": POINTED,
                   "providers": {POINTED: {**entry, "settings": {**provider, "baseUrl": gateway + "/v1"}}}}  # fmt: skip
        path = data_dir / "cline" / "providers.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".providers.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the user's key
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(pointed, indent=2) + "\n")
        tmp.replace(path)
        return Launch(env={VARIABLE: str(path)}, files=[path])


AGENT = Cline()
