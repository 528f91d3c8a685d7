"""The proxy's config file → typed upstream specs.

The file is the `{"mcpServers": {...}}` format of `claude_desktop_config.json`, so existing entries move over
unchanged: stdio entries (`command`, `args`, `env`, `cwd`) and remote entries (`url`, optional `headers`;
streamable HTTP, or SSE when `transport`/`type` says "sse" or the URL path ends in `/sse`). Our own options live
under an `"offload"` key that other MCP clients ignore, per server and once at the top level:

    {
      "offload": {"threshold_tokens": 2000, "call_timeout_s": 120, "startup_timeout_s": 30, "lazy_tools": false},
      "mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
               "offload": {"threshold_tokens": 4000, "never": ["list_allowed_directories"], "prefix": "files"}},
        "api": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}}
      }
    }

Stdio upstreams inherit the proxy's environment (the client's) minus `MCP_OFFLOAD_*`, with the entry's `env` on
top; `"inherit_env": false` and `"pass_env": ["NAME", "AWS_*"]` (top level or per server) narrow it. The rule is
proxy/upstream_env.py's.

Every mistake is a `ConfigError` naming the file, the server and the field, so the user can fix it in one go.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp_offload.errors import OperatorError
from mcp_offload.units import check_url_port

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD_TOKENS = 2000
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_STARTUP_TIMEOUT_S = 30.0

_ENV_KEYS = {"inherit_env", "pass_env"}  # stdio upstreams' environment (proxy/upstream_env.py)
_GLOBAL_KEYS = {"threshold_tokens", "call_timeout_s", "startup_timeout_s", "lazy_tools", *_ENV_KEYS}
_SERVER_OPTION_KEYS = {
    "threshold_tokens",
    "never",
    "always",
    "prefix",
    "disabled",
    "call_timeout_s",
    "startup_timeout_s",
    *_ENV_KEYS,
}
# Keys other clients put in an entry (Cline's autoApprove, VS Code's type, …): accepted and ignored.
_KNOWN_ENTRY_KEYS = {"command", "args", "env", "cwd", "url", "headers", "transport", "type", "offload", "disabled"}
_SSE = {"sse"}
_HTTP = {"http", "streamable-http", "streamable_http", "streamablehttp"}  # compared lowercased
_STDIO = {"stdio"}


class ConfigError(OperatorError):
    """The config file is unusable; the message (for the user, not the model) says where and how to fix it."""


@dataclass(frozen=True, slots=True)
class StdioTarget:
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # on top of what it inherits (see proxy/upstream_env.py)
    cwd: str | None = None
    inherit_env: bool = True  # the proxy's environment minus MCP_OFFLOAD_*; False: the SDK's minimal set
    pass_env: tuple[str, ...] = ()  # names (shell patterns) passed through either way


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    url: str
    transport: Literal["http", "sse"] = "http"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """Per-server proxy options (the entry's "offload" key). None = use the global value."""

    threshold_tokens: int | None = None
    never: frozenset[str] = frozenset()  # upstream tool names whose results always pass through
    always: frozenset[str] = frozenset()  # upstream tool names whose results are always offloaded
    prefix: str | None = None  # tool-name prefix; default: the server name
    disabled: bool = False
    call_timeout_s: float | None = None
    startup_timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    name: str
    target: StdioTarget | RemoteTarget
    options: ServerOptions = field(default_factory=ServerOptions)

    @property
    def prefix(self) -> str:
        return self.name if self.options.prefix is None else self.options.prefix

    @property
    def kind(self) -> str:
        return "stdio" if isinstance(self.target, StdioTarget) else self.target.transport


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    upstreams: tuple[UpstreamSpec, ...]
    threshold_tokens: int = DEFAULT_THRESHOLD_TOKENS
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    lazy_tools: bool = False
    path: Path | None = field(default=None, compare=False)  # the file it was read from (reload watches it)

    @property
    def enabled(self) -> tuple[UpstreamSpec, ...]:
        return tuple(spec for spec in self.upstreams if not spec.options.disabled)

    def threshold_for(self, spec: UpstreamSpec) -> int:
        value = spec.options.threshold_tokens
        return self.threshold_tokens if value is None else value

    def call_timeout_for(self, spec: UpstreamSpec) -> float:
        value = spec.options.call_timeout_s
        return self.call_timeout_s if value is None else value

    def startup_timeout_for(self, spec: UpstreamSpec) -> float:
        value = spec.options.startup_timeout_s
        return self.startup_timeout_s if value is None else value


def load_config(path: str | Path) -> ProxyConfig:
    """Read and validate a config file. Raises `ConfigError` (never a bare OSError/JSONDecodeError)."""
    file = Path(path).expanduser()
    where = str(path)
    try:
        raw = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it ({exc})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    config = parse_config(data, source=where, base_dir=file.resolve().parent)
    return replace(config, path=file)


def parse_config(data: Any, *, source: str = "config", base_dir: Path | None = None) -> ProxyConfig:
    """Validate an already-parsed config. Relative `cwd` values are resolved against `base_dir`."""
    if not isinstance(data, dict):
        raise ConfigError(f'{source}: the top level must be a JSON object like {{"mcpServers": {{...}}}}')
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise ConfigError(f'{source}: no "mcpServers" object (the format of claude_desktop_config.json)')
    if not isinstance(servers, dict):
        raise ConfigError(f'{source}: "mcpServers" must be an object mapping server names to entries')
    glob = _options_object(data.get("offload"), f'{source}: "offload"', _GLOBAL_KEYS)
    where = f'{source}: "offload"'
    env_rule = _EnvRule(_bool(glob, "inherit_env", where, True), _pass_env(glob, where))
    upstreams = tuple(_parse_entry(name, entry, source, base_dir, env_rule) for name, entry in servers.items())
    return ProxyConfig(
        upstreams=upstreams,
        threshold_tokens=_int(glob, "threshold_tokens", where, DEFAULT_THRESHOLD_TOKENS),
        call_timeout_s=_seconds(glob, "call_timeout_s", where, DEFAULT_CALL_TIMEOUT_S),
        startup_timeout_s=_seconds(glob, "startup_timeout_s", where, DEFAULT_STARTUP_TIMEOUT_S),
        lazy_tools=_bool(glob, "lazy_tools", where, False),
    )


@dataclass(frozen=True, slots=True)
class _EnvRule:
    """The top-level environment options, which each stdio entry's own override (inherit) or extend (pass)."""

    inherit: bool
    passed: tuple[str, ...]


def _parse_entry(name: Any, entry: Any, source: str, base_dir: Path | None, env_rule: _EnvRule) -> UpstreamSpec:
    where = f"{source}: server {name!r}"
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{source}: server names must be non-empty strings")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: the entry must be an object with a command or a url")
    ignored = sorted(set(entry) - _KNOWN_ENTRY_KEYS)
    if ignored:
        log.debug("%s: ignoring keys %s", where, ", ".join(ignored))
    options = _parse_options(entry.get("offload"), where)
    if entry.get("disabled") is True:  # Cline / Roo put "disabled" on the entry itself
        options = ServerOptions(**{**_fields(options), "disabled": True})
    declared = entry.get("transport", entry.get("type"))
    if declared is not None and not isinstance(declared, str):
        raise ConfigError(f'{where}: "transport" must be a string such as "stdio", "http" or "sse"')
    declared_norm = declared.strip().lower() if declared else None
    known = _SSE | _HTTP | _STDIO
    if declared_norm is not None and declared_norm not in known:
        raise ConfigError(f'{where}: unknown transport {declared!r}; use "stdio", "http" (streamable HTTP) or "sse"')
    has_command, has_url = "command" in entry, "url" in entry
    if has_command and has_url:
        raise ConfigError(f'{where}: has both "command" and "url"; keep one (command = stdio, url = remote)')
    if has_command:
        if declared_norm not in (None, *_STDIO):
            raise ConfigError(f'{where}: transport {declared!r} needs a "url", not a "command"')
        return UpstreamSpec(name, _stdio_target(entry, where, base_dir, env_rule), options)
    if has_url:
        if isinstance(entry.get("offload"), dict) and _ENV_KEYS & set(entry["offload"]):
            raise ConfigError(f'{where}: "inherit_env" and "pass_env" are for stdio servers (a "command")')
        if declared_norm in _STDIO:
            raise ConfigError(f'{where}: transport "stdio" needs a "command", not a "url"')
        return UpstreamSpec(name, _remote_target(entry, where, declared_norm), options)
    raise ConfigError(f'{where}: needs "command" (a local stdio server) or "url" (a remote server)')


def _stdio_target(entry: dict[str, Any], where: str, base_dir: Path | None, env_rule: _EnvRule) -> StdioTarget:
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f'{where}: "command" must be a non-empty string')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f'{where}: "args" must be a list of strings')
    env = _string_map(entry.get("env"), f'{where}: "env"', allow_numbers=True)
    cwd = entry.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd:
            raise ConfigError(f'{where}: "cwd" must be a non-empty string')
        path = Path(cwd).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        cwd = str(path)
    for text in (command, *args, *env.keys(), *env.values(), cwd or ""):
        if "\x00" in text:
            raise ConfigError(f"{where}: command, args, env and cwd cannot contain NUL characters")
    opts = entry.get("offload") or {}
    at = f'{where}: "offload"'
    return StdioTarget(
        command=command,
        args=tuple(args),
        env=env,
        cwd=cwd,
        inherit_env=_bool(opts, "inherit_env", at, env_rule.inherit),
        pass_env=tuple(dict.fromkeys((*env_rule.passed, *_pass_env(opts, at)))),
    )


def _pass_env(opts: dict[str, Any], where: str) -> tuple[str, ...]:
    raw = opts.get("pass_env", [])
    if not isinstance(raw, list) or not all(isinstance(n, str) and n and "=" not in n for n in raw):
        raise ConfigError(f'{where}.pass_env must be a list of variable names (or patterns such as "AWS_*")')
    return tuple(raw)


def _remote_target(entry: dict[str, Any], where: str, declared: str | None) -> RemoteTarget:
    url = entry["url"]
    if not isinstance(url, str):
        raise ConfigError(f'{where}: "url" must be a string')
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f'{where}: "url" must be an http:// or https:// URL, got {url[:100]!r}')
    try:
        check_url_port(url)
    except ValueError as exc:
        raise ConfigError(f'{where}: "url": {exc}') from None
    headers = _string_map(entry.get("headers"), f'{where}: "headers"', allow_numbers=False)
    if declared in _SSE or (declared is None and parts.path.rstrip("/").endswith("/sse")):
        transport: Literal["http", "sse"] = "sse"
    else:
        transport = "http"
    return RemoteTarget(url=url, transport=transport, headers=headers)


def _parse_options(raw: Any, where: str) -> ServerOptions:
    opts = _options_object(raw, f'{where}: "offload"', _SERVER_OPTION_KEYS)
    at = f'{where}: "offload"'
    never = _names(opts, "never", at)
    always = _names(opts, "always", at)
    both = never & always
    if both:
        raise ConfigError(f"{at}: {sorted(both)} listed in both never and always; keep each tool in one list")
    prefix = opts.get("prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise ConfigError(f'{at}.prefix must be a string ("" for no prefix)')
    return ServerOptions(
        threshold_tokens=_int(opts, "threshold_tokens", at, None),
        never=never,
        always=always,
        prefix=prefix,
        disabled=_bool(opts, "disabled", at, False),
        call_timeout_s=_seconds(opts, "call_timeout_s", at, None),
        startup_timeout_s=_seconds(opts, "startup_timeout_s", at, None),
    )


def _options_object(raw: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be an object")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {unknown}; known: {sorted(allowed)}")
    return raw


def _fields(options: ServerOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in ServerOptions.__dataclass_fields__}


def _string_map(raw: Any, where: str, *, allow_numbers: bool) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be an object of string values")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            out[key] = value
        elif allow_numbers and isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = str(value)
        else:
            raise ConfigError(f"{where}.{key} must be a string, got {type(value).__name__}")
    return out


def _names(opts: dict[str, Any], key: str, where: str) -> frozenset[str]:
    raw = opts.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(n, str) and n for n in raw):
        raise ConfigError(f"{where}.{key} must be a list of upstream tool names")
    return frozenset(raw)


def _int(opts: dict[str, Any], key: str, where: str, default: Any) -> Any:
    value = opts.get(key, default)
    if value is default:
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}.{key} must be a whole number >= 0, got {value!r}")
    return value


def _seconds(opts: dict[str, Any], key: str, where: str, default: Any) -> Any:
    value = opts.get(key, default)
    if value is default:
        return value
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}.{key} must be a number of seconds > 0, got {value!r}")
    return float(value)


def _bool(opts: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = opts.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key} must be true or false, got {value!r}")
    return value
