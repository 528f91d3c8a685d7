"""The real Gemini CLI (`@google/gemini-cli`, pinned in .ci/agents-deps.sh), headless, through the real
`mcp-offload gateway` process (`GOOGLE_GEMINI_BASE_URL`), against the scripted Gemini upstream.

The upstream's AgentScript makes the agent run `cat data.json` with its `run_shell_command` tool (a JSON document
with a fact planted in its middle, out of reach of any preview), then calls the gateway's retrieval tool, then
answers with the fact. Asserted: the upstream saw the shell output offloaded (Gemini CLI's `{"output": …}` became a
reference), the gateway's transparent loop found the fact inside the stream, the agent printed it, every request
was accepted (thought signatures sent back as issued), and every prompt extends the previous one except the one on
which the retrieval tools are added, with everything after it read from the simulated implicit cache.

Gemini CLI 0.61 needs, headless with a base URL: an auth type selected in `$HOME/.gemini/settings.json`
(`gemini-api-key`; else it picks a "gateway" type and exits 41) and a trusted folder (`GEMINI_CLI_TRUST_WORKSPACE`).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import ReceivedRequest, UpstreamServer, extends
from support.agents import GEMINI, RETRIEVAL_TOOLS, need, planted_inventory
from support.gateway_process import gateway_process

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

FACT = "PLANTED-" + random.Random(23).randbytes(6).hex()
TASK = f"Find the deploy key in data.json.\n@run cat data.json\n@search {FACT[:8]}\n@answer PLANTED-[0-9a-f]{{12}}"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"maxAttempts": 2, "disableAutoUpdate": True, "disableUpdateNag": True},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def big_document(records_count: int = 150) -> str:
    return planted_inventory(FACT, records_count)


@pytest.fixture
def gateway(llm_upstream: UpstreamServer, tmp_path: Path) -> Iterator[str]:
    base = llm_upstream.base_url
    with gateway_process(
        tmp_path / "store", base, llm_upstream.openai_url, tmp_path / "gateway.log", "--gemini-upstream", base
    ) as url:
        yield url


def _calls_and_results(request: ReceivedRequest) -> tuple[dict[str, tuple[str, Any]], dict[str, str]]:
    calls: dict[str, tuple[str, Any]] = {}
    results: dict[str, str] = {}
    for content in request.json.get("contents", []):
        for part in content.get("parts", []):
            if "functionCall" in part:
                call = part["functionCall"]
                calls[call.get("id") or call["name"]] = (call["name"], call.get("args"))
            if "functionResponse" in part:
                answer = part["functionResponse"]
                results[answer.get("id") or answer["name"]] = json.dumps(answer["response"], ensure_ascii=False)
    return calls, results


def _declared(request: ReceivedRequest) -> list[str]:
    return [d["name"] for t in request.json.get("tools", []) for d in t.get("functionDeclarations", [])]


def test_gemini_cli_headless_through_the_gateway(llm_upstream: UpstreamServer, gateway: str, tmp_path: Path) -> None:
    need(GEMINI)
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    work.mkdir()
    document = big_document()
    (work / "data.json").write_text(document)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
    env.update(HOME=str(home), GEMINI_API_KEY="gemini-cli-key", GOOGLE_GEMINI_BASE_URL=gateway,
               GEMINI_CLI_TRUST_WORKSPACE="true", NO_COLOR="1")  # fmt: skip
    done = subprocess.run(
        [str(GEMINI), "-p", TASK, "--yolo", "-m", "gemini-2.5-flash"],
        env=env, cwd=work, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, f"gemini failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert FACT in done.stdout, done.stdout[-2000:]

    received = llm_upstream.requests
    assert all(r.status == 200 for r in received), [(r.path, r.status, r.error) for r in received]
    main = [r for r in received if r.api == "gemini" and r.json.get("tools")]
    assert all(r.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent" for r in main)
    assert all(r.headers.get("x-goog-api-key") == "gemini-cli-key" for r in main)
    calls, results = _calls_and_results(main[-1])
    shell = [cid for cid, (name, args) in calls.items() if name == "run_shell_command" and "cat data.json" in str(args)]
    assert shell, calls
    offloaded = results[shell[0]]
    assert FACT not in offloaded and "Stored as " in offloaded and len(offloaded) < len(document) / 2, offloaded[:400]
    searches = [cid for cid, (name, _) in calls.items() if name == "search_large_output"]
    assert searches and FACT in results[searches[0]], "the gateway's retrieval did not find the planted fact"

    tools_added = []
    for n, (earlier, later) in enumerate(itertools.pairwise(main), start=1):
        if extends("gemini", earlier.json, later.json):
            continue
        assert set(_declared(later)) - set(_declared(earlier)) == RETRIEVAL_TOOLS, f"request {n} broke the prefix"
        assert extends("gemini", {**earlier.json, "tools": []}, {**later.json, "tools": []}), n
        tools_added.append(n)
    assert len(tools_added) == 1, tools_added
    for earlier, later in itertools.pairwise(main[tools_added[0] :]):
        assert earlier.usage and later.usage
        assert later.usage.cache_read >= earlier.usage.prompt_tokens, "the previous prompt was not read from cache"
