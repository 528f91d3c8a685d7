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

Cline runs its sessions in a hub daemon (`cline --cline-hub-daemon`), which it starts detached, with the environment
of the run that started it, and leaves running; every later `cline` finds it through a discovery record
(`~/.cline/data/locks/hub/production.json`) or by a probe of its fixed port (25463), and attaches. A hub started
through wrap would so send a later plain `cline` to a gateway that no longer exists, and a hub the user already runs
would take wrap's run around the gateway. So each run gets a hub of its own: `CLINE_HUB_DISCOVERY_PATH` names a record
under mcp-offload's data directory and `CLINE_HUB_PORT` a free port, both for this run alone, and `finished` stops the
hub the run started (the pid in that record) and removes the record. (`--print-env` names a hub of its own the same
way; the hub the printed environment's runs start keeps running until stopped.)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.cli.wrap.agents.base import Install, Launch, WrapError

POINTED = "openai-compatible"
FORMAT_VERSION = 1
VARIABLE = "CLINE_PROVIDER_SETTINGS_PATH"
HUB_RECORD = "CLINE_HUB_DISCOVERY_PATH"
HUB_PORT = "CLINE_HUB_PORT"
HUB_FLAG = "--cline-hub-daemon"
STOP_WAIT_S = 10.0


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
        port = free_port()
        hub = data_dir / "cline" / "hubs" / str(port) / "hub.json"  # written by the hub Cline starts
        return Launch(env={VARIABLE: str(path), HUB_RECORD: str(hub), HUB_PORT: str(port)}, files=[path])

    def finished(self, plan: Launch) -> None:
        """Stop the hub daemon the run started and remove its record. The hub is found by its environment (Linux:
        the one whose CLINE_HUB_DISCOVERY_PATH is this run's: Cline starts it detached, and on a busy machine it may
        not have written its record yet when the run ends), else by the pid in its record."""
        record = plan.env[HUB_RECORD]
        hubs = hubs_of(record)
        if hubs is None:  # no /proc: the record's pid (only this run's hub writes there)
            try:
                pid = json.loads(Path(record).read_text(encoding="utf-8")).get("pid")
            except (OSError, ValueError, AttributeError):
                pid = None
            hubs = [pid] if isinstance(pid, int) and pid > 1 and alive(pid) else []
        for pid in hubs:
            stop_process(pid)
        shutil.rmtree(Path(record).parent, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def hubs_of(record: str) -> list[int] | None:
    """The Cline hub daemons whose environment names `record` as their discovery record (None: no /proc here)."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return None
    wanted = f"{HUB_RECORD}={record}".encode()
    found = []
    for entry in proc.glob("[0-9]*"):
        try:
            if HUB_FLAG.encode() in (entry / "cmdline").read_bytes().split(b"\0") and wanted in (
                entry / "environ"
            ).read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not Path("/proc/self").exists():
        return True
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())  # a zombie's is empty
    except OSError:
        return False


def stop_process(pid: int) -> None:
    """SIGTERM, then SIGKILL after STOP_WAIT_S (it is not our child: its parent exited, so it is polled)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


AGENT = Cline()
