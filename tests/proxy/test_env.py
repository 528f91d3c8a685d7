"""The environment stdio upstreams start with (proxy/upstream_env.py): the proxy's own minus MCP_OFFLOAD_*, the
entry's `env` on top; `inherit_env: false` and `pass_env` at the top level and per server. And the stderr lines
that explain a failed start, in its status."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.proxy.config import ConfigError, parse_config
from mcp_offload.proxy.upstream import explain_from_stderr
from support import text_of
from support.proxy import fixture_entry, running_proxy

PROBES = ("SSL_CERT_FILE", "GITHUB_TOKEN", "AWS_PROFILE", "MCP_OFFLOAD_TOKEN", "ENTRY_VAR", "PATH")


@pytest.fixture
def user_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a user's shell (and so the client that starts the proxy) has set."""
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/corp/ca.pem")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_example")
    monkeypatch.setenv("AWS_PROFILE", "dev")
    monkeypatch.setenv("MCP_OFFLOAD_TOKEN", "the-proxys-own-bearer-token")


async def _seen(client: Client, server: str) -> dict[str, str]:
    seen = {}
    for name in PROBES:
        result = await client.call_tool(f"{server}__env", {"name": name})
        assert not result.is_error, text_of(result)
        seen[name] = text_of(result)
    return seen


@pytest.mark.usefixtures("user_env")
async def test_upstreams_inherit_the_users_environment_but_not_the_proxys_settings(services: Services) -> None:
    config: dict[str, Any] = {
        "mcpServers": {
            "plain": fixture_entry(env={"ENTRY_VAR": "from-the-entry", "AWS_PROFILE": "prod"}),
            "strict": fixture_entry(offload={"inherit_env": False, "pass_env": ["GITHUB_*"]}),
        }
    }
    async with running_proxy(services, config) as server, Client(server) as client:
        plain, strict = await _seen(client, "plain"), await _seen(client, "strict")
    assert plain["SSL_CERT_FILE"] == "/etc/corp/ca.pem" and plain["GITHUB_TOKEN"] == "ghp_example"
    assert plain["AWS_PROFILE"] == "prod" and plain["ENTRY_VAR"] == "from-the-entry"  # the entry's env wins
    assert plain["MCP_OFFLOAD_TOKEN"] == "<unset>"  # the proxy's own settings stay with it
    assert strict["GITHUB_TOKEN"] == "ghp_example"  # passed through by pattern
    assert strict["SSL_CERT_FILE"] == strict["AWS_PROFILE"] == strict["ENTRY_VAR"] == "<unset>"
    assert strict["PATH"] not in ("", "<unset>")  # the SDK's minimal set


@pytest.mark.usefixtures("user_env")
async def test_top_level_rule_and_per_server_override(services: Services) -> None:
    config: dict[str, Any] = {
        "offload": {"inherit_env": False, "pass_env": ["SSL_CERT_FILE"]},
        "mcpServers": {
            "a": fixture_entry(offload={"pass_env": ["AWS_PROFILE", "MCP_OFFLOAD_TOKEN"]}),
            "b": fixture_entry(offload={"inherit_env": True}),
        },
    }
    async with running_proxy(services, config) as server, Client(server) as client:
        a, b = await _seen(client, "a"), await _seen(client, "b")
    assert a["SSL_CERT_FILE"] == "/etc/corp/ca.pem" and a["AWS_PROFILE"] == "dev"  # top-level + own pass_env
    assert a["MCP_OFFLOAD_TOKEN"] == "the-proxys-own-bearer-token"  # named explicitly: passed
    assert a["GITHUB_TOKEN"] == "<unset>"
    assert b["GITHUB_TOKEN"] == "ghp_example" and b["MCP_OFFLOAD_TOKEN"] == "<unset>"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"offload": {"pass_env": "HOME"}, "mcpServers": {}}, '"offload".pass_env must be a list of variable names'),
        ({"mcpServers": {"s": {"command": "x", "offload": {"pass_env": ["A=1"]}}}}, "pass_env must be a list"),
        ({"mcpServers": {"s": {"command": "x", "offload": {"inherit_env": "no"}}}}, "inherit_env must be true or"),
        ({"mcpServers": {"r": {"url": "https://h/mcp", "offload": {"inherit_env": False}}}}, "are for stdio servers"),
    ],
)
def test_bad_environment_options_are_config_errors(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_config(config, source="servers.json")


UV_CERT_FAILURE = """Installed 0 packages
  × Failed to download `mcp-server-fetch==2025.4.7`
  ├─▶ Request failed after 3 retries
  ├─▶ error sending request for url (https://files.pythonhosted.org/x.whl)
  ├─▶ client error (Connect)
  ╰─▶ invalid peer certificate: UnknownIssuer
  help: Consider enabling use of system TLS certificates with the `--native-tls` command-line flag
"""


async def test_a_failed_start_shows_the_stderr_lines_that_say_why(services: Services) -> None:
    script = f"cat >&2 <<'END'\n{UV_CERT_FAILURE}END\nexit 2"
    config = {"mcpServers": {"fetch": {"command": "sh", "args": ["-c", script]}}}
    async with running_proxy(services, config) as server, Client(server) as client:
        await client.list_tools()  # waits for the first start to end
        status = await client.call_tool("proxy_status", {})
    (fetch,) = result_of(status)["servers"]
    assert "invalid peer certificate: UnknownIssuer" in fetch["last_error"]  # the why, not only the hint
    assert "--native-tls" in fetch["last_error"]


def test_explanation_keeps_an_earlier_error_line_and_the_newest_lines() -> None:
    lines = ["starting", "Error: EACCES opening /data", *[f"hint {i}" for i in range(10)], ""]
    explained = explain_from_stderr(lines)
    assert explained.startswith("Error: EACCES opening /data | … |") and explained.endswith("hint 9")
    assert explain_from_stderr(["a", "", "b"]) == "a | b" and explain_from_stderr([]) == ""
    long = explain_from_stderr([f"error {i} " + "x" * 290 for i in range(6)])
    assert len(long) <= 1000 and long.endswith("x")
