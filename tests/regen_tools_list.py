"""Regenerate tests/data/tools_list.json from the server, for a deliberate contract change (say why in the commit):
`.venv/bin/python tests/regen_tools_list.py tests/data/tools_list.json`."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from mcp import Client

from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.settings import Settings


async def listed_tools() -> list[dict[str, object]]:
    services = build_services(Settings(store=tempfile.mkdtemp()))
    try:
        async with Client(build_server(services), mode="auto") as client:
            listed = await client.list_tools()
    finally:
        await services.aclose()
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(asyncio.run(listed_tools()), indent=1, sort_keys=True))
