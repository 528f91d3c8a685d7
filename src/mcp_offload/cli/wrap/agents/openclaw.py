"""OpenClaw (`openclaw`, npm `openclaw`): Anthropic Messages, OpenAI Responses or the Gemini API, by the model chosen
(its built-in `anthropic`, `openai` and `google` providers).

OpenClaw reads one config file (JSON5): `OPENCLAW_CONFIG_PATH`, else `openclaw.json` in its state directory. wrap
points `OPENCLAW_CONFIG_PATH` at a file of mcp-offload's own, under its data directory (one per gateway, so runs on
different gateways never share one), that `$include`s the user's config whole and lays over it, as sibling keys
OpenClaw merges last, `models.providers.<id>.baseUrl` of the three built-in providers at the gateway, with the API
adapter each speaks (a `baseUrl` alone would turn an overlay into Chat Completions). The user's config directory is
added to `OPENCLAW_INCLUDE_ROOTS` (OpenClaw refuses an include outside the including file's directory otherwise).
Nothing of the user's is written: OpenClaw never writes a config whose root is an `$include` (it fails closed), and
its state, credentials, auth profiles and other providers stay the user's.

A `baseUrl` or adapter the user gave one of those providers is read from their config (JSON5, its `$include`s and
`${NAME}`s resolved as OpenClaw does: openclaw_config.py): a base URL becomes the upstream of the gateway started for
the run (`upstreams`), so the requests still end up where they went without wrap; an adapter the gateway does not
serve is refused in one line. Arguments that make OpenClaw read another config (`--config`, `--profile`, `--dev`) or
none (`--isolated`, `--auth-env-only`) are refused in one line too (`refused_arguments`): the run would go around the
gateway.

The include, its sibling overrides and `OPENCLAW_INCLUDE_ROOTS` are those of OpenClaw 2026.9 (read in its
src/config/includes.ts, config/paths.ts and the models.providers schema): wrap knows 2026.9 up to 2027.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, Versions, WrapError, own_data_dir, write_if_changed
from mcp_offload.cli.wrap.agents.openclaw_config import load_config, substitute

CONFIG = "OPENCLAW_CONFIG_PATH"
ROOTS = "OPENCLAW_INCLUDE_ROOTS"
NAMES = ("openclaw.json", "clawdbot.json")  # OpenClaw's config file names, in its order (the second a legacy one)
# OpenClaw's built-in provider -> the API adapter it speaks unless the user's config names another
PROVIDERS = {"anthropic": "anthropic-messages", "openai": "openai-responses", "google": "google-generative-ai"}
# an adapter the gateway serves -> (the path its baseUrl carries after the host, the gateway's upstream flag)
ADAPTERS = {
    "anthropic-messages": ("", "anthropic_upstream"),
    "openai-responses": ("/v1", "openai_upstream"),
    "openai-completions": ("/v1", "openai_upstream"),
    "google-generative-ai": ("/v1beta", "gemini_upstream"),
}
ANOTHER_CONFIG = ("--config", "--profile", "--dev")
NO_CONFIG = ("--isolated", "--auth-env-only")


def own_dir(data_dir: Path) -> Path:
    return data_dir / "openclaw"


def openclaw_home(environ: Mapping[str, str]) -> Path:
    """OpenClaw's home: OPENCLAW_HOME (`~` expanded), else HOME."""
    home = Path(environ.get("HOME") or Path.home())
    configured = (environ.get("OPENCLAW_HOME") or "").strip()
    if not configured or configured in ("undefined", "null"):
        return home
    return home / configured[2:] if configured == "~" or configured.startswith("~/") else Path(configured).absolute()


def user_path(value: str, environ: Mapping[str, str]) -> Path:
    """A path setting of OpenClaw's (`~` is OpenClaw's home)."""
    value = value.strip()
    if value == "~" or value.startswith("~/"):
        return openclaw_home(environ) / value[2:]
    return Path(os.path.abspath(value))


def user_config(environ: Mapping[str, str], own: Path) -> Path | None:
    """The user's OpenClaw config file, found as OpenClaw finds it (None: they have none). A CONFIG naming wrap's own
    file (left by an `eval` of `wrap --print-env`) is not the user's."""
    explicit = (environ.get(CONFIG) or "").strip()
    if explicit and not user_path(explicit, environ).resolve().is_relative_to(own.resolve()):
        path = user_path(explicit, environ)
        return path if path.is_file() else None
    profile = (environ.get("OPENCLAW_PROFILE") or "").strip()
    if profile and profile.lower() != "default":
        raise WrapError(f"OPENCLAW_PROFILE={profile[:40]!r}: wrap points OpenClaw's default profile only; unset it")
    home = openclaw_home(environ)
    state = (environ.get("OPENCLAW_STATE_DIR") or "").strip()
    dirs = [user_path(state, environ)] if state else []
    dirs += [home / ".openclaw", home / ".clawdbot"]
    return next((d / name for d in dirs for name in NAMES if (d / name).is_file()), None)


def gateway_port(gateway: str) -> str:
    return str(urlsplit(gateway).port or "default")


class OpenClaw:
    name = "openclaw"
    title = "OpenClaw"
    executable = "openclaw"
    install = Install("npm", "openclaw")
    apis = (APIS["anthropic"], APIS["responses"], APIS["gemini"])
    pointed_by = f"{CONFIG}: a config that $includes yours, with the built-in providers' baseUrl"
    knows = Versions((2026, 9, 0), (2027, 0, 0), "2026.9.6")

    def _providers(
        self, environ: Mapping[str, str], data_dir: Path
    ) -> tuple[Path | None, dict[str, tuple[str, str | None]]]:
        """(the user's config, {built-in provider: (its adapter, the base URL the user gave it or None)})."""
        user = user_config(environ, own_dir(data_dir))
        config = load_config(user) if user is not None else {}
        models = config.get("models")
        configured = models.get("providers") if isinstance(models, dict) else None
        found: dict[str, tuple[str, str | None]] = {}
        for provider, default in PROVIDERS.items():
            entry = configured.get(provider) if isinstance(configured, dict) else None
            entry = entry if isinstance(entry, dict) else {}
            base = entry.get("baseUrl")
            # a baseUrl without an adapter is a Chat Completions endpoint to OpenClaw, built-in provider or not
            adapter = entry.get("api") or ("openai-completions" if isinstance(base, str) and base.strip() else default)
            if adapter not in ADAPTERS:
                raise WrapError(
                    f"{user}: models.providers.{provider}.api is {str(adapter)[:60]!r}; the gateway serves "
                    f"{', '.join(ADAPTERS)}: run OpenClaw without wrap"
                )
            where = f"{user}: models.providers.{provider}.baseUrl"
            url = substitute(base.strip(), environ, where).rstrip("/") if isinstance(base, str) and base else None
            found[provider] = (str(adapter), url)
        return user, found

    def upstreams(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The base URLs the user's config gives the built-in providers, as the gateway's upstream flags."""
        flags: dict[str, str] = {}
        for provider, (adapter, url) in self._providers(environ, own_data_dir())[1].items():
            if url is None:
                continue
            flag = ADAPTERS[adapter][1]
            upstream = url.removesuffix("/v1beta") if flag == "gemini_upstream" else url
            if flags.get(flag, upstream) != upstream:
                raise WrapError(
                    f"OpenClaw's config sends two providers of one API to different base URLs ({flags[flag]}, "
                    f"{upstream}; {provider}): the gateway has one upstream per API, so run OpenClaw without wrap"
                )
            flags[flag] = upstream
        return flags

    def refused_arguments(self, args: Sequence[str]) -> str | None:
        """Why OpenClaw's arguments `args` would take the run around the gateway (None: they do not)."""
        for arg in args:
            if arg == "--":
                break
            option = arg.split("=", 1)[0]
            if option in ANOTHER_CONFIG:
                return (
                    f"OpenClaw {option} reads another config than the one wrap points (yours, included): run it "
                    f"without {option}, or point that config yourself (models.providers.<id>.baseUrl)"
                )
            if option in NO_CONFIG:
                return f"OpenClaw {option} reads no config, so wrap cannot point it: run it without {option}"
        return None

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        user, providers = self._providers(environ, data_dir)
        pointed = {
            provider: {"baseUrl": gateway + ADAPTERS[adapter][0], "api": adapter}
            for provider, (adapter, _) in providers.items()
        }
        config: dict[str, Any] = {"$include": str(user)} if user is not None else {}
        config["models"] = {"providers": pointed}
        path = own_dir(data_dir) / gateway_port(gateway) / "openclaw.json"
        write_if_changed(path, json.dumps(config, indent=2) + "\n")
        env = {CONFIG: str(path)}
        roots = [str(user.parent)] if user is not None else []
        roots += [environ[ROOTS]] if (environ.get(ROOTS) or "").strip() else []
        if roots:
            env[ROOTS] = os.pathsep.join(roots)
        return Launch(env=env, files=[path])


AGENT = OpenClaw()
