"""The router: namespaced public names, URI templates, calls and errors forwarded, catalog changes relayed."""

from __future__ import annotations

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError

from mcp_offload.core.services import Services
from mcp_offload.proxy.names import MAX_NAME, _template_regex, public_name
from support import ERAS, text_of
from support.proxy import fixture_entry, running_proxy


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


@pytest.mark.parametrize("mode", ERAS)
async def test_errors_pass_through_untouched(services: Services, mode: str) -> None:
    config = {"mcpServers": {"fix": fixture_entry(offload={"threshold_tokens": 100})}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as excinfo:
            await client.call_tool("fix__fail", {"n": 1})
        assert (excinfo.value.code, excinfo.value.message) == (types.INVALID_PARAMS, "n is out of range")
        big_error = await client.call_tool("fix__fail", {"n": 2})
        assert big_error.is_error and text_of(big_error) == "E" * 50_000  # over the threshold, yet not offloaded


@pytest.mark.parametrize("mode", ERAS)
async def test_list_changed_is_relayed_and_pagination_is_complete(services: Services, mode: str) -> None:
    config = {"mcpServers": {"fix": fixture_entry()}}
    async with running_proxy(services, config) as server:
        changes: list[anyio.Event] = [anyio.Event()]

        async def on_message(message: object) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                changes[-1].set()

        async with Client(server, mode=mode, message_handler=on_message) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            fixture_tools = sorted(n for n in names if n.startswith("fix__"))
            assert len(fixture_tools) == 9  # three upstream pages of 3
            weird = next(n for n in fixture_tools if n.startswith("fix__weird_name_with_chars_"))
            assert text_of(await client.call_tool(weird, {"name": "routed"})) == "routed"
            if mode == "legacy":
                changes.append(anyio.Event())  # (the upstream's first catalog may have been announced already)
                await client.call_tool("fix__add_tool", {"name": "fresh"})
                with anyio.fail_after(5):
                    await changes[-1].wait()
            else:
                async with client.listen(tools_list_changed=True) as subscription:
                    await client.call_tool("fix__add_tool", {"name": "fresh"})
                    with anyio.fail_after(5):
                        async for _event in subscription:
                            break
            names = {t.name for t in (await client.list_tools()).tools}
            assert "fix__fresh" in names
            assert text_of(await client.call_tool("fix__fresh", {})) == "called fresh"
