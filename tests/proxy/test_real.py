"""Proxy mode against real third-party MCP servers (npm reference servers, PyPI git server), both client eras.

Needs `.ci/proxy-deps.sh`; each test skips loudly when its server is missing. Every test starts its own
upstream processes (about a second each, in parallel).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from support import ERAS, resource_blob, resource_text, text_of
from support.proxy import npm_entry, python_entry, running_proxy

pytestmark = pytest.mark.parametrize("mode", ERAS)

PLANTED = "NEEDLE-7f3a: the one line the model is looking for"


def _big_file(path: Path, megabytes: float = 5.0, planted_at: int = 41_234) -> Path:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "ü", "€", "日本"]
    lines, size, i = [], 0, 0
    while size < megabytes * 1_000_000:
        line = PLANTED if i == planted_at - 1 else f"{i + 1:06d} " + " ".join(rng.choices(words, k=12))
        lines.append(line)
        size += len(line.encode()) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [b for b in result.content if isinstance(b, types.ResourceLink)]


def _stored_handle(result: types.CallToolResult) -> str:
    links = [link for link in _links(result) if str(link.uri).startswith("offload://outputs/")]
    assert links, f"expected an offloaded result, got: {text_of(result)[:300]}"
    return str(links[0].uri).removeprefix("offload://outputs/")


async def test_filesystem_multi_mb_read_offloaded_then_found_by_search(
    services: Services, tmp_path: Path, mode: str
) -> None:
    big = _big_file(tmp_path / "big.log")
    (tmp_path / "tiny.txt").write_text("tiny file\n")
    config = {"mcpServers": {"fs": npm_entry("server-filesystem", str(tmp_path))}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "fs__read_text_file" in tools and tools["fs__read_text_file"].output_schema is None

        result = await client.call_tool("fs__read_text_file", {"path": str(big)})
        assert not result.is_error and result.structured_content is None
        handle = _stored_handle(result)
        reply = text_of(result)
        assert f"Stored as {handle}" in reply and len(reply) < 6_000
        assert "{content: text}" not in reply and reply.count("Stored as") == 1  # structuredContent stored once

        found = await client.call_tool("search_large_output", {"pattern": "NEEDLE-7f3a", "handle": handle})
        assert f"in {handle};" in text_of(found) and "\n41234: " in text_of(found) and PLANTED in text_of(found)
        lines = await client.call_tool("read_large_output", {"handle": handle, "start_line": 41234, "end_line": 41234})
        assert result_of(lines)["text"] == PLANTED + "\n"

        whole = await client.read_resource(f"offload://outputs/{handle}")
        assert resource_text(whole.contents[0]) == big.read_text(encoding="utf-8")  # lossless

        tiny = await client.call_tool("fs__read_text_file", {"path": str(tmp_path / "tiny.txt")})
    async with Client(StdioServerParameters(**config["mcpServers"]["fs"]), mode=mode) as direct:
        expected = await direct.call_tool("read_text_file", {"path": str(tmp_path / "tiny.txt")})
    assert tiny.model_dump(by_alias=True, exclude={"meta"}) == expected.model_dump(by_alias=True, exclude={"meta"})


def _git_repo_with_big_change(repo: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("PROXY TEST SKIPPED: the git command is not installed")
    repo.mkdir()
    source = repo / "module.py"
    source.write_text("".join(f"value_{i} = {i}\n" for i in range(20_000)))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    source.write_text("".join(f"value_{i} = {i * (2 if i % 10 == 0 else 1)}\n" for i in range(20_000)))
    return repo


async def test_git_diff_offloaded_then_searched_and_read(services: Services, tmp_path: Path, mode: str) -> None:
    repo = _git_repo_with_big_change(tmp_path / "repo")
    config = {"mcpServers": {"git": python_entry("mcp-server-git", "--repository", str(repo))}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        result = await client.call_tool("git__git_diff_unstaged", {"repo_path": str(repo)})
        handle = _stored_handle(result)
        # the tool and its arguments are what the model just wrote: the reply does not repeat them
        assert text_of(result).startswith("[mcp-offload] This result is over the proxy's ")
        assert "git__git_diff_unstaged" not in text_of(result)
        found = await client.call_tool(
            "search_large_output", {"pattern": r"^\+value_7770 = ", "handle": handle, "context_lines": 1}
        )
        assert "+value_7770 = 15540" in text_of(found)
        line = result_of(found)["matches"][0]["line"]
        before = await client.call_tool(
            "read_large_output", {"handle": handle, "start_line": line - 1, "end_line": line}
        )
        assert result_of(before)["text"] == "-value_7770 = 7770\n+value_7770 = 15540\n"
        status = await client.call_tool("git__git_status", {"repo_path": str(repo)})  # small: passed through
        assert "module.py" in text_of(status) and not _links(status)


async def test_memory_graph_json_offloaded_then_queried_with_jq(services: Services, tmp_path: Path, mode: str) -> None:
    entry = npm_entry("server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    async with running_proxy(services, {"mcpServers": {"memory": entry}}) as server, Client(server, mode=mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["memory__read_graph"].output_schema is None  # the upstream declares one: dropped
        entities = [
            {"name": f"person-{i}", "entityType": "person", "observations": [f"likes topic {i}", "lives in Oslo"]}
            for i in range(400)
        ]
        created = await c.call_tool("memory__create_entities", {"entities": entities})
        assert not created.is_error
        graph = await c.call_tool("memory__read_graph", {})
        handle = _stored_handle(graph)
        assert text_of(graph).count("Stored as") == 1  # text JSON and structuredContent: stored once
        listing = await c.call_tool("list_outputs", {})
        kinds = {o["handle"]: o["kind"] for o in result_of(listing)["outputs"]}
        assert kinds[handle] == "json"
        count = await c.call_tool("query_large_output", {"handle": handle, "query": ".entities | length"})
        assert text_of(count).strip() == "400"
        names = await c.call_tool(
            "query_large_output",
            {"handle": handle, "query": '.entities[] | select(.name == "person-123") | .observations[0]', "raw": True},
        )
        assert text_of(names).strip() == "likes topic 123"


async def test_everything_image_blob_progress_resources_prompts(services: Services, mode: str) -> None:
    entry = npm_entry("server-everything", "stdio", offload={"threshold_tokens": 500})
    async with running_proxy(services, {"mcpServers": {"every": entry}}) as server, Client(server, mode=mode) as c:
        image = await c.call_tool("every__get-tiny-image", {})
        handle = _stored_handle(image)
        reply = text_of(image)
        assert "binary; 4,033 bytes, image/png" in reply and "Here's the image you requested:" in reply
        assert not any(isinstance(b, types.ImageContent) for b in image.content)
        blob = await c.read_resource(f"offload://outputs/{handle}")
        async with Client(StdioServerParameters(**entry_without_offload(entry)), mode="legacy") as direct:
            upstream = await direct.call_tool("get-tiny-image", {})
        original = next(b for b in upstream.content if isinstance(b, types.ImageContent))
        assert resource_blob(blob.contents[0]) == original.data and blob.contents[0].mime_type == "image/png"

        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        done = await c.call_tool(
            "every__trigger-long-running-operation", {"duration": 0.4, "steps": 4}, progress_callback=on_progress
        )
        assert "completed" in text_of(done) and seen == [1, 2, 3, 4]

        resources = (await c.list_resources()).resources
        docs = [r for r in resources if str(r.uri).startswith("demo://resource/static/document/")]
        assert docs and all(r.name.startswith("every__") for r in docs)
        read = await c.read_resource(str(docs[0].uri))
        assert resource_text(read.contents[0])
        templates = (await c.list_resource_templates()).resource_templates
        assert any(t.name.startswith("every__") for t in templates)
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert "every__simple-prompt" in prompts
        prompt = await c.get_prompt("every__simple-prompt")
        assert prompt.messages and prompt.messages[0].role == "user"


def entry_without_offload(entry: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in entry.items() if k in ("command", "args", "env", "cwd")}


async def test_structured_content_survives_client_validation(services: Services, mode: str) -> None:
    """The SDK client validates structuredContent against outputSchema: with the schema kept (never offloaded),
    the passed-through result validates; with offloading possible, the schema is not listed, so a reference
    (no structure) cannot fail validation."""
    config = {
        "mcpServers": {
            "kept": npm_entry("server-everything", "stdio", offload={"never": ["get-structured-content"]}),
            "off": npm_entry("server-everything", "stdio", offload={"always": ["get-structured-content"]}),
        }
    }
    async with running_proxy(services, config) as server, Client(server, mode=mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert (tools["kept__get-structured-content"].output_schema or {})["required"] == [
            "temperature",
            "conditions",
            "humidity",
        ]
        assert tools["off__get-structured-content"].output_schema is None
        kept = await c.call_tool("kept__get-structured-content", {"location": "Chicago"})  # validated by the SDK
        assert kept.structured_content == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
        assert json.loads(text_of(kept)) == kept.structured_content
        off = await c.call_tool("off__get-structured-content", {"location": "Chicago"})
        handle = _stored_handle(off)
        assert off.structured_content is None and not off.is_error
        stored = await c.call_tool("query_large_output", {"handle": handle, "query": ".humidity"})
        assert text_of(stored).strip() == "82"
