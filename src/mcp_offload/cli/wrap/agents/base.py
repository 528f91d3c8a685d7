"""What a coding agent is to `mcp-offload wrap`: the `Agent` protocol that each module of this package implements once
(everything about one agent in its own file), and the values they share.

An agent says what it is (`name`, `title`), where it comes from (`executable`, `install`), which LLM API it speaks
(`apis`), how it is pointed at the gateway (`pointed_by`, one line for `wrap --list`) and, through `launch`, exactly
what `wrap` gives it: variables, command-line arguments put before the user's own, and configuration files it wrote
under mcp-offload's own data directory (never a file of the user's). An agent pointed by a configuration format that
changes between its versions names the versions whose format it knows (`knows`); any other version is refused in one
line instead of guessed at.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import platformdirs

from mcp_offload.apis.base import LlmApi
from mcp_offload.errors import OperatorError

VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class WrapError(OperatorError):
    """wrap cannot run the agent as asked (the message says why); nothing was started."""


@dataclass(frozen=True, slots=True)
class Install:
    """Where an agent comes from: its package on npm or PyPI."""

    registry: Literal["npm", "PyPI"]
    package: str

    def command(self) -> str:
        """The one command that installs it, as the agent's own docs give it."""
        if self.registry == "npm":
            return f"npm install -g {self.package}"
        return f"pipx install {self.package}"


@dataclass(frozen=True, slots=True)
class Launch:
    """What `wrap` gives the agent: variables added to its environment, arguments put before the user's own, and the
    configuration files it wrote for it (under mcp-offload's own data directory)."""

    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Versions:
    """The agent versions whose configuration format an agent module knows: `low` included, `high` excluded."""

    low: tuple[int, int, int]
    high: tuple[int, int, int]
    tested: str  # the version the tests run

    def contains(self, version: tuple[int, int, int]) -> bool:
        return self.low <= version < self.high

    def describe(self) -> str:
        def text(v: tuple[int, int, int]) -> str:
            return ".".join(map(str, v))

        return f"{text(self.low)} up to (not including) {text(self.high)}; tested with {self.tested}"


class Agent(Protocol):
    name: str  # what the user types after `wrap`
    title: str  # its name in messages to people
    executable: str
    pointed_by: str  # how, in a few words (for `wrap --list`)

    @property
    def apis(self) -> tuple[LlmApi, ...]:
        """The APIs wrap points it at (an agent that speaks several, by the model chosen, is pointed for each)."""
        ...

    @property
    def install(self) -> Install | None:
        """Its package (None: wrap does not know where it comes from)."""
        ...

    @property
    def knows(self) -> Versions | None:
        """The versions whose configuration format `launch` writes (None: it writes none that changes)."""
        ...

    def launch(self, gateway: str, data_dir: Path, environ: Mapping[str, str]) -> Launch:
        """What points the agent at `gateway` (http://host:port, no path), in the user's environment `environ`;
        files it needs are written under `data_dir` (mcp-offload's own data directory), none elsewhere."""
        ...


def agent_upstreams(agent: Agent, environ: Mapping[str, str]) -> dict[str, str]:
    """The upstreams (`--*-upstream` flag as an attribute name, e.g. `openai_upstream` → base URL) that the agent's own
    configuration names: where its requests went without wrap, so a gateway started for the run forwards them there.
    An agent module whose agent has such a setting defines `upstreams(environ)`; the others have none."""
    found = getattr(agent, "upstreams", None)
    return dict(found(environ)) if callable(found) else {}


def refused_arguments(agent: Agent, args: Sequence[str]) -> None:
    """Refuse, in one line, arguments of the agent's own that would take its run around the gateway (another config
    file than the one wrap points, none at all). An agent module that knows such arguments defines
    `refused_arguments(args)`, the reason or None."""
    found = getattr(agent, "refused_arguments", None)
    reason = found(args) if callable(found) else None
    if reason:
        raise WrapError(str(reason))


def agent_finished(agent: Agent, plan: Launch) -> None:
    """After the agent's run: what its module leaves behind it (an agent that starts a background process of its own
    for the run defines `finished(plan)`, which stops it)."""
    found = getattr(agent, "finished", None)
    if callable(found):
        found(plan)


def own_data_dir() -> Path:
    """mcp-offload's own data directory, where an agent's module writes the files that point it."""
    return Path(platformdirs.user_data_dir("mcp-offload", appauthor=False))


def parse_version(text: str) -> tuple[int, int, int] | None:
    found = VERSION.search(text)
    if found is None:
        return None
    return int(found[1]), int(found[2]), int(found[3] or 0)


def installed_version(agent: Agent, executable: str) -> str | None:
    """The version of `agent` installed at `executable`: from its package's metadata beside the executable (npm's
    package.json, PyPI's dist-info), else from `executable --version`; None when neither says."""
    found = package_version(agent.install, Path(executable)) if agent.install else None
    if found is not None:
        return found
    try:
        done = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION.search(done.stdout) if done.returncode == 0 else None
    return match[0] if match else None


def package_version(install: Install, executable: Path) -> str | None:
    try:
        resolved = executable.resolve()
    except OSError:
        return None
    if install.registry == "npm":
        for parent in resolved.parents:
            meta = parent / "package.json"
            if meta.is_file():
                try:
                    data = json.loads(meta.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    return None
                if isinstance(data, dict) and data.get("name") == install.package:
                    version = data.get("version")
                    return version if isinstance(version, str) else None
        return None
    prefix = resolved.parent.parent  # <venv>/bin/<script>: the dist-info sits in <venv>/lib/python*/site-packages
    wanted = install.package.replace("-", "_").lower()
    for info in prefix.glob("lib/python*/site-packages/*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
        if name.lower() == wanted:
            return version
    return None


def check_version(agent: Agent, executable: str) -> None:
    """Refuse, in one line, an installed version whose configuration format `agent` does not know."""
    if agent.knows is None:
        return
    version = installed_version(agent, executable)
    parsed = parse_version(version) if version else None
    if parsed is None:
        raise WrapError(
            f"cannot tell which version of {agent.title} {executable} is, so not which configuration format it "
            f"takes (wrap knows {agent.knows.describe()})"
        )
    if not agent.knows.contains(parsed):
        raise WrapError(
            f"{agent.title} {version} is not a version whose configuration format wrap knows "
            f"({agent.knows.describe()}); install that version or point it yourself"
        )


def write_if_changed(path: Path, text: str) -> None:
    """`path` holds `text` afterwards: written atomically (a temporary file renamed over it), and only when it held
    something else, so a run that changes nothing writes nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def users_dir(configured: str | None, default: Path, own: Path) -> Path:
    """The user's own directory of an agent: the one a variable of theirs names (`configured`), else `default`; a
    variable naming `own`, wrap's directory for the agent (left by an `eval` of `wrap --print-env`), is not theirs."""
    if configured:
        path = Path(configured).expanduser()
        if path.resolve() != own.resolve():
            return path
    return default


def link_entries(user: Path, own: Path, except_name: str) -> None:
    """Make `own` a directory holding a symbolic link to every entry of the user's directory `user` but
    `except_name` (the file wrap writes there instead), refreshed: links to entries gone or moved are removed. An
    agent pointed at `own` then reads and writes the user's own files through the links."""
    own.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in user.iterdir() if entry.name != except_name} if user.is_dir() else {}
    for entry in own.iterdir():
        if entry.is_symlink() and (entry.name not in wanted or os.readlink(entry) != str(wanted[entry.name])):
            entry.unlink()
    for name, target in wanted.items():
        link = own / name
        if not link.is_symlink() and not link.exists():
            link.symlink_to(target)


def read_json_object(path: Path, instead: str) -> dict[str, Any]:
    """The JSON object in the user's file `path` ({} when there is none); a file that is not one is refused in one
    line that says what to do `instead`."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise WrapError(f"cannot read {path} as JSON; {instead}") from None
    if not isinstance(data, dict):
        raise WrapError(f"{path} is not a JSON object; {instead}")
    return data
