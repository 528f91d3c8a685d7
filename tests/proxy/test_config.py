"""The proxy's config file: the `mcpServers` format, our `offload` options, errors that name the server and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_offload.proxy.config import (
    DEFAULT_THRESHOLD_TOKENS,
    ConfigError,
    RemoteTarget,
    StdioTarget,
    load_config,
    parse_config,
)

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
        },
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_PAGER": "cat", "DEPTH": 3}},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        "legacy-sse": {"url": "http://127.0.0.1:3001/sse"},
        "typed-sse": {"url": "http://127.0.0.1:3001/events", "type": "sse"},
        "off": {"command": "x", "disabled": True, "autoApprove": ["a"]},
    }
}


def test_claude_desktop_entries_move_over_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(CLAUDE_DESKTOP))
    config = load_config(path)
    specs = {spec.name: spec for spec in config.upstreams}
    assert specs["filesystem"].target == StdioTarget(
        command="npx", args=("-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop")
    )
    assert specs["git"].target.env == {"GIT_PAGER": "cat", "DEPTH": "3"}  # type: ignore[union-attr]
    assert specs["remote"].target == RemoteTarget(
        url="https://example.com/mcp", transport="http", headers={"Authorization": "Bearer x"}
    )
    assert specs["legacy-sse"].target.transport == "sse"  # type: ignore[union-attr]
    assert specs["typed-sse"].target.transport == "sse"  # type: ignore[union-attr]
    assert specs["off"].options.disabled is True
    assert [s.name for s in config.enabled] == ["filesystem", "git", "remote", "legacy-sse", "typed-sse"]
    assert config.threshold_tokens == DEFAULT_THRESHOLD_TOKENS
    assert specs["filesystem"].prefix == "filesystem"


def test_offload_options_global_and_per_server(tmp_path: Path) -> None:
    config = parse_config(
        {
            "offload": {"threshold_tokens": 500, "call_timeout_s": 5, "lazy_tools": True},
            "mcpServers": {
                "a": {"command": "a", "cwd": "sub", "offload": {"threshold_tokens": 9000, "never": ["t1"],
                                                                 "always": ["t2"], "prefix": "", "call_timeout_s": 1}},
                "b": {"command": "b"},
            },
        },
        base_dir=tmp_path,
    )  # fmt: skip
    a, b = config.upstreams
    assert config.lazy_tools is True
    assert (config.threshold_for(a), config.threshold_for(b)) == (9000, 500)
    assert (config.call_timeout_for(a), config.call_timeout_for(b)) == (1.0, 5.0)
    assert a.options.never == {"t1"} and a.options.always == {"t2"} and a.prefix == ""
    assert a.target.cwd == str(tmp_path / "sub")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ([], "top level must be a JSON object"),
        ({"servers_typo": {}}, 'no "mcpServers"'),
        ({"mcpServers": {"x": {}}}, "server 'x': needs \"command\""),
        ({"mcpServers": {"x": {"command": "a", "url": "http://h/mcp"}}}, "server 'x': has both"),
        ({"mcpServers": {"x": {"command": 3}}}, "server 'x': \"command\" must be a non-empty string"),
        ({"mcpServers": {"x": {"command": "a", "args": "-v"}}}, "server 'x': \"args\" must be a list"),
        ({"mcpServers": {"x": {"command": "a", "env": {"K": None}}}}, "server 'x': \"env\".K must be a string"),
        ({"mcpServers": {"x": {"url": "ftp://h/x"}}}, "server 'x': \"url\" must be an http"),
        ({"mcpServers": {"x": {"url": "http://h/mcp", "transport": "carrier-pigeon"}}}, "unknown transport"),
        ({"mcpServers": {"x": {"url": "http://h/mcp", "type": "stdio"}}}, 'transport "stdio" needs a "command"'),
        ({"mcpServers": {"x": {"command": "a", "offload": {"treshold": 1}}}}, "unknown option(s) ['treshold']"),
        ({"mcpServers": {"x": {"command": "a", "offload": {"threshold_tokens": -1}}}}, "threshold_tokens must be"),
        ({"mcpServers": {"x": {"command": "a", "offload": {"never": ["t"], "always": ["t"]}}}}, "both never and"),
        ({"mcpServers": {"x": {"command": "a", "offload": {"call_timeout_s": 0}}}}, "call_timeout_s must be"),
        ({"offload": {"lazy_tools": "yes"}, "mcpServers": {}}, "lazy_tools must be true or false"),
    ],
)
def test_config_errors_name_the_server_and_field(config: object, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(config, source="servers.json")
    assert message in str(excinfo.value)
    assert str(excinfo.value).startswith("servers.json")


def test_unreadable_config_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {,}}')
    with pytest.raises(ConfigError, match=r"not valid JSON: .* line 1"):
        load_config(bad)


def test_the_shipped_examples_parse() -> None:
    """examples/servers.example.json and the Claude Desktop example stay valid as the format evolves."""
    import json as _json
    from pathlib import Path as _Path

    from mcp_offload.proxy.config import load_config as _load

    root = _Path(__file__).resolve().parents[2]
    config = _load(root / "examples" / "servers.example.json")
    assert [u.name for u in config.upstreams] == ["filesystem", "git", "memory", "remote-api"]
    memory = config.upstreams[2].target
    assert (
        isinstance(memory, StdioTarget) and not memory.inherit_env and memory.pass_env == ("HTTPS_PROXY", "SSL_CERT_*")
    )
    desktop = _json.loads((root / "claude_desktop_config.example.json").read_text())
    (entry,) = desktop["mcpServers"].values()  # one entry: two would start every upstream twice
    assert entry["command"].endswith("/mcp-offload") and entry["args"] == []  # absolute: clients have a minimal PATH
