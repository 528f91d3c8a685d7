"""The gateway's figures on the HTTP service's status page and /stats (same store), next to the MCP savings."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2

from llm_upstream import UpstreamServer
from mcp_offload.core.services import build_services
from mcp_offload.serve.http import HttpOptions
from mcp_offload.settings import Settings
from support.gateway_server import StartGateway
from support.http_transport import serving
from support.llm_conversations import BASH_ANTHROPIC, anthropic_messages, build_log, search_then_answer


async def test_http_status_page_and_stats_show_the_gateway(
    upstream: UpstreamServer, start_gateway: StartGateway, tmp_path: Path
) -> None:
    store = str(tmp_path / "shared-store")
    services = build_services(Settings(store=store, jq_workers=1))
    try:
        async with serving(services, HttpOptions()) as base, httpx2.AsyncClient(timeout=30) as http:
            before = (await http.get(base + "/stats")).json()
            assert before["gateway"]["sessions_total"] == 0
            assert "LLM gateway" not in (await http.get(base + "/")).text  # nothing to show yet
            upstream.use(search_then_answer())
            gateway = start_gateway(upstream, store=store)
            client = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
            await client.messages.create(model="claude-sonnet-4-6", max_tokens=256,
                                         messages=anthropic_messages(build_log()), tools=[BASH_ANTHROPIC])  # fmt: skip
            after = (await http.get(base + "/stats")).json()["gateway"]
            assert after["sessions_total"] == 1 and after["totals"]["loops"] == 1
            assert after["totals"]["cost_ratio"] < 1
            page = (await http.get(base + "/")).text
            assert "LLM gateway" in page and "going direct" in page
    finally:
        await services.aclose()
