"""Proxy building blocks without upstream processes: the config file, tool naming, the offload decision."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import mcp.types as types
import pytest

from mcp_offload.proxy.config import (
    DEFAULT_THRESHOLD_TOKENS,
    ConfigError,
    RemoteTarget,
    StdioTarget,
    load_config,
    parse_config,
)
from mcp_offload.proxy.policy import OffloadPolicy, measure, repeats_content, split_result
from mcp_offload.proxy.router import MAX_NAME, _template_regex, public_name
from mcp_offload.services import Services

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


def test_public_names_are_valid_unique_and_stable() -> None:
    taken: set[str] = {"offload"}
    assert public_name("fs", "read_text_file", taken, "fs\0read_text_file") == "fs__read_text_file"
    weird = public_name("srv", "weird name/with:chars", taken, "srv\0weird")
    assert weird.startswith("srv__weird_name_with_chars_") and len(weird) == len("srv__weird_name_with_chars_") + 8
    assert weird == public_name("srv", "weird name/with:chars", set(), "srv\0weird")  # stable
    taken.add("fs__read_text_file")
    second = public_name("fs", "read_text_file", taken, "fs2\0read_text_file")  # same prefix from another server
    assert second != "fs__read_text_file" and second.startswith("fs__read_text_file_")
    assert public_name("", "offload", taken, "x\0offload") != "offload"  # never shadows our own tools
    long = public_name("p", "t" * 300, set(), "p\0long")
    assert len(long) == MAX_NAME
    for name in (weird, second, long):
        assert all(c.isalnum() or c in "_.-" for c in name)


def test_template_regex() -> None:
    assert _template_regex("demo://resource/dynamic/text/{id}").fullmatch("demo://resource/dynamic/text/42")
    assert not _template_regex("demo://r/{id}").fullmatch("demo://r/4/2")
    assert _template_regex("file://{+path}").fullmatch("file:///a/b/c.txt")


def _text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


@pytest.mark.parametrize(
    ("content", "structured", "repeated"),
    [
        ([_text('{"a": 1, "b": [1, 2]}')], {"b": [1, 2], "a": 1}, True),  # JSON.stringify(x) + x
        ([_text("file body")], {"content": "file body"}, True),  # server-filesystem: {content: text}
        ([_text('[{"n": 1}]')], {"entities": [{"n": 1}]}, True),  # server-memory: {entities: x}
        ([types.ImageContent(type="image", data="AAAA", mime_type="image/png")],
         {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}, True),  # wraps the blocks
        ([_text('{"a": 1}')], {"a": 2}, False),
        ([_text("3")], {"result": 3}, False),
        ([], {"a": 1}, False),
    ],
)  # fmt: skip
def test_structured_content_repeating_the_content_counts_once(content, structured, repeated) -> None:  # type: ignore[no-untyped-def]
    texts = [b.text for b in content if isinstance(b, types.TextContent)]
    assert repeats_content(structured, content, texts) is repeated
    parts = split_result(types.CallToolResult(content=content, structured_content=structured))
    assert any(p.kind == "structured" for p in parts) is not repeated


async def test_measure_stops_at_the_threshold(services: Services) -> None:
    big = "word " * 200_000
    parts = split_result(types.CallToolResult(content=[_text(big)]))
    assert 100 < measure(parts, services.tokens, 100) < 10_000
    small = split_result(types.CallToolResult(content=[_text("hello world")]))
    assert measure(small, services.tokens, 100) == services.tokens.count("hello world")
    image = split_result(
        types.CallToolResult(content=[types.ImageContent(type="image", data="A" * 4000, mime_type="image/png")])
    )
    assert measure(image, services.tokens, 100_000) == 1000


async def test_policy_keeps_small_results_and_errors_byte_for_byte(services: Services) -> None:
    policy = OffloadPolicy(services)
    small = types.CallToolResult(content=[_text("x" * 10)], structured_content={"k": "v"}, _meta={"up": 1})
    before = small.model_dump(by_alias=True, exclude={"meta"})
    out, decision = await policy.apply(
        small, scope="0" * 32, server="s", tool="t", public_name="s__t", arguments=None, threshold=100
    )
    assert out.model_dump(by_alias=True, exclude={"meta"}) == before and out.meta is None
    assert decision.offloaded is False
    error = types.CallToolResult(content=[_text("boom " * 10_000)], is_error=True)
    out, decision = await policy.apply(
        error, scope="0" * 32, server="s", tool="t", public_name="s__t", arguments=None, threshold=100
    )
    assert out.content[0].text == "boom " * 10_000 and out.is_error and not decision.offloaded


async def test_policy_offloads_each_part_and_keeps_a_caption(services: Services) -> None:
    policy = OffloadPolicy(services)
    png = base64.b64encode(bytes(range(256)) * 40).decode()
    result = types.CallToolResult(
        content=[
            _text("Here's the image:"),
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///log.txt", text="log line\n" * 3000, mime_type="text/plain"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///other.txt", name="other"),
        ]
    )
    out, decision = await policy.apply(
        result, scope="0" * 32, server="srv", tool="pic", public_name="srv__pic", arguments={"q": 1}, threshold=500
    )
    assert decision.offloaded and len(decision.handles) == 2
    kinds = [type(b).__name__ for b in out.content]
    assert kinds == ["TextContent", "TextContent", "ResourceLink", "ResourceLink", "ResourceLink"]
    assert out.content[1].text == "Here's the image:"  # the caption stays inline, verbatim
    reply = out.content[0].text
    assert "binary; 10,240 bytes, image/png" in reply and "embedded resource file:///log.txt" in reply
    links = [b for b in out.content if isinstance(b, types.ResourceLink)]
    assert [str(link.uri) for link in links][-1] == "file:///other.txt"  # the upstream's own link is kept
    blob = await services.store.meta("0" * 32, decision.handles[0])
    assert (blob.kind, blob.size, blob.mime_type, blob.source) == ("blob", 10_240, "image/png", "proxy:srv/pic")
    async with services.store.open("0" * 32, decision.handles[0]) as stored:
        assert stored.read_bytes(0, stored.meta.size) == bytes(range(256)) * 40
    log = await services.store.meta("0" * 32, decision.handles[1])
    assert log.lines == 3000 and log.name == 'srv__pic {"q":1} embedded resource file:///log.txt'
    assert decision.tokens_original > decision.tokens_reply > 0


def test_the_shipped_examples_parse() -> None:
    """examples/servers.example.json and the Claude Desktop example stay valid as the format evolves."""
    import json as _json
    from pathlib import Path as _Path

    from mcp_offload.proxy.config import load_config as _load

    root = _Path(__file__).resolve().parents[1]
    config = _load(root / "examples" / "servers.example.json")
    assert [u.name for u in config.upstreams] == ["filesystem", "git", "memory", "remote-api"]
    desktop = _json.loads((root / "claude_desktop_config.example.json").read_text())
    assert desktop["mcpServers"]["offload"]["command"] == "mcp-offload"
