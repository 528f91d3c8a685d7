"""The environment a stdio upstream starts with.

The rule, as MCP clients do it: an upstream inherits the proxy's environment (which is the client's: Claude Desktop,
Claude Code or Cursor start mcp-offload the way they would have started the server itself), so `SSL_CERT_FILE`,
`HTTPS_PROXY`, `GITHUB_TOKEN`, `AWS_PROFILE` and the like reach it. Left out: the proxy's own settings
(`MCP_OFFLOAD_*`, the HTTP bearer token among them). The entry's `env` goes on top.

Under `"offload"` (at the top level, or per server, which wins): `"inherit_env": false` starts upstreams from the
MCP SDK's minimal set instead (HOME, LOGNAME, PATH, SHELL, TERM, USER); `"pass_env": ["GITHUB_TOKEN", "AWS_*"]`
names variables (shell-style patterns) passed through in either case, the denied ones included. Top-level and
per-server `pass_env` lists add up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from mcp.client.stdio import get_default_environment

DENIED_PREFIXES = ("MCP_OFFLOAD_",)  # the proxy's own configuration, its bearer token included


def is_denied(name: str) -> bool:
    return name.upper().startswith(DENIED_PREFIXES)


def upstream_environment(
    proxy_env: Mapping[str, str],
    *,
    inherit: bool,
    pass_env: Iterable[str],
    entry_env: Mapping[str, str],
) -> dict[str, str]:
    """The full environment for one stdio upstream (see the module docstring for the rule)."""
    if inherit:
        env = {name: value for name, value in proxy_env.items() if not is_denied(name)}
    else:
        env = get_default_environment()
    patterns = tuple(pass_env)
    env.update({name: value for name, value in proxy_env.items() if any(fnmatchcase(name, p) for p in patterns)})
    env.update(entry_env)
    return env
