"""The tool list is a public contract: names, descriptions, input and output schemas, annotations.

`tests/data/tools_list.json` was taken from the server before the restructuring (issue 8); any change to it must
be deliberate (regenerate the file and say why in the commit).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from conftest import ERAS
from mcp_offload.server import OffloadServer

SNAPSHOT = Path(__file__).parent / "data" / "tools_list.json"


@pytest.mark.parametrize("mode", ERAS)
async def test_tools_list_matches_the_published_contract(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        listed = await client.list_tools()
    got = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    assert got == json.loads(SNAPSHOT.read_text())
