"""Real coding agents from npm (Claude Code, Codex CLI), headless, through the real `mcp-offload gateway` process,
against the scripted upstream (tests/llm_upstream).

The upstream's default AgentScript makes the agent run a shell command whose output is big (a JSON document with
a fact planted in its middle, out of reach of any preview), then calls the gateway's retrieval tool, then answers
with the fact. Asserted: the upstream saw the result offloaded (a reference + preview, not the fact), the
retrieval found the fact, the agent printed it, and every turn's prompt extends the previous one (no cache miss
caused by the gateway, measured by the upstream's simulated prompt cache), also across a second, continued task.

The agents come from .ci/agents-deps.sh (pinned versions, in ~/.cache/mcp-offload/agents or
$MCP_OFFLOAD_TEST_AGENTS); without them the tests skip and say how to install them.
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
from support.agents import CLAUDE, CODEX, RETRIEVAL_TOOLS, need, planted_inventory
from support.gateway_process import gateway_process

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

AGENT_TIMEOUT_S = 240
FACT = "PLANTED-" + random.Random(17).randbytes(6).hex()
TASK = f"Find the deploy key in data.json.\n@run cat data.json\n@search {FACT[:8]}\n@answer PLANTED-[0-9a-f]{{12}}"
SECOND_TASK = "How many bytes is data.json?\n@run wc -c data.json\n@answer [0-9]+ data.json"


def big_document(records_count: int = 150) -> str:
    return planted_inventory(FACT, records_count)


CODEX_RECORDS = 60


@pytest.fixture
def workdir(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.json").write_text(big_document(CODEX_RECORDS if "codex" in request.node.name else 150))
    return work


@pytest.fixture
def gateway(llm_upstream: UpstreamServer, tmp_path: Path) -> Iterator[str]:
    """`mcp-offload gateway` as its own process in front of the scripted upstream; yields its base URL."""
    with gateway_process(
        tmp_path / "store", llm_upstream.base_url, llm_upstream.openai_url, tmp_path / "gateway.log"
    ) as base:
        yield base


def run_agent(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE"))}
    full_env.update(env)
    done = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True, text=True, timeout=AGENT_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, f"{cmd[0]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


# -- assertions on what reached the upstream ------------------------------------------------------------------------
def tool_results(api: str, request: ReceivedRequest) -> list[tuple[str, str]]:
    """(call id, text) of every tool result in the request."""
    out: list[tuple[str, str]] = []
    body = request.json
    if api == "anthropic":
        for msg in body.get("messages", []):
            for block in msg["content"] if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
                    out.append((block["tool_use_id"], text))
    else:
        for item in body.get("input", []):
            if item.get("type") == "function_call_output":
                output = item["output"]
                text = output if isinstance(output, str) else "".join(p.get("text", "") for p in output)
                out.append((item["call_id"], text))
    return out


def tool_calls(api: str, request: ReceivedRequest) -> list[tuple[str, str, Any]]:
    """(call id, tool name, input) of every tool call in the request's history."""
    out: list[tuple[str, str, Any]] = []
    body = request.json
    if api == "anthropic":
        for msg in body.get("messages", []):
            for block in msg["content"] if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    out.append((block["id"], block["name"], block["input"]))
    else:
        for item in body.get("input", []):
            if item.get("type") == "function_call":
                out.append((item["call_id"], item["name"], json.loads(item["arguments"])))
    return out


def check_offload_and_retrieval(api: str, main: list[ReceivedRequest], shell_command: str, document: str) -> None:
    last = main[-1]
    calls = {cid: (name, args) for cid, name, args in tool_calls(api, last)}
    results = dict(tool_results(api, last))
    shell_ids = [cid for cid, (_, args) in calls.items() if shell_command in json.dumps(args)]
    assert shell_ids, f"the agent never ran {shell_command!r}: {calls}"
    offloaded = results[shell_ids[0]]
    assert FACT not in offloaded, "the big result reached the upstream whole (or its preview shows the fact)"
    assert "Stored as " in offloaded and len(offloaded) < len(document) / 2, offloaded[:500]
    searches = [cid for cid, (name, _) in calls.items() if name == "search_large_output"]
    assert searches and FACT in results[searches[0]], "the retrieval call did not find the planted fact"
    names = [t.get("name") for t in last.json.get("tools", [])]
    assert "search_large_output" in names  # injected once the first output was offloaded ...
    first_with = next(
        i for i, r in enumerate(main) if "search_large_output" in [t.get("name") for t in r.json["tools"]]
    )
    for r in main[first_with:]:  # ... and byte-identical on every later request
        injected = [t for t in r.json["tools"] if t.get("name") == "search_large_output"]
        assert injected == [t for t in main[first_with].json["tools"] if t.get("name") == "search_large_output"]


def check_cache(api: str, main: list[ReceivedRequest]) -> dict[str, Any]:
    """Every main-conversation request extends the previous one, except once: the request on which the gateway
    appends its retrieval tools (tools come first in the prompt, so that request writes the cache anew; the design
    pays this once per session, and only in sessions that offload). Its messages still extend the previous ones,
    and every request after it reads the whole previous prompt from the simulated cache."""
    tool_changes = []
    for n, (earlier, later) in enumerate(itertools.pairwise(main), start=1):
        if extends(api, earlier.json, later.json):
            continue
        before, after = earlier.json.get("tools", []), later.json.get("tools", [])
        assert after[: len(before)] == before and {t.get("name") for t in after[len(before) :]} == RETRIEVAL_TOOLS, (
            f"request {n} does not extend request {n - 1}: the gateway changed an already-sent prefix"
        )
        assert extends(api, {**earlier.json, "tools": []}, {**later.json, "tools": []}), (
            f"request {n}: messages changed"
        )
        tool_changes.append(n)
    assert len(tool_changes) == 1, f"the retrieval tools were added more than once: requests {tool_changes}"
    after_tools = [r.usage for r in main[tool_changes[0] + 1 :] if r.usage]
    step = 1 if api == "anthropic" else 128  # OpenAI reads in 128-token steps
    for earlier, later in itertools.pairwise(main[tool_changes[0] :]):
        assert earlier.usage and later.usage
        lost = earlier.usage.prompt_tokens - later.usage.cache_read
        why = (
            "; the earlier request is the gateway's retrieval follow-up: it must carry a cache breakpoint at its end "
            "(move the client's last `cache_control` there) so the next turn can read what it added"
            if api == "anthropic" and ends_with_retrieval_result(earlier.json)
            else ""
        )
        assert lost < step, f"{lost} tokens of the previous prompt were not read from the cache{why}"
    prompt = sum(u.prompt_tokens for u in after_tools)
    return {
        "requests": len(main),
        "tools_added_at": tool_changes[0],
        "read_share": sum(u.cache_read for u in after_tools) / prompt,
    }


def ends_with_retrieval_result(body: dict[str, Any]) -> bool:
    """The request ends with the results of the gateway's own retrieval calls (a loop follow-up)."""
    messages = body.get("messages", [])
    if len(messages) < 2 or not isinstance(messages[-1].get("content"), list):
        return False
    calls = {b["id"]: b["name"] for b in messages[-2].get("content", []) if b.get("type") == "tool_use"}
    ids = [b.get("tool_use_id") for b in messages[-1]["content"] if b.get("type") == "tool_result"]
    return bool(ids) and all(calls.get(i) in RETRIEVAL_TOOLS for i in ids)


def explain(upstream: UpstreamServer, result: str) -> str:
    received = upstream.requests
    with_tools = sum(1 for r in received if RETRIEVAL_TOOLS & {t.get("name") for t in r.json.get("tools", [])})
    roles = sorted({m.get("role", "?") for r in received for m in r.json.get("messages", [])})
    return (
        f"agent said {result[:300]!r}; {len(received)} upstream requests, {with_tools} with the retrieval tools "
        f"(0: the gateway offloaded nothing); message roles seen: {roles}"
    )


# -- Claude Code ------------------------------------------------------------------------------------------------
def claude_env(home: Path, gateway: str) -> dict[str, str]:
    return {
        "HOME": str(home), "ANTHROPIC_BASE_URL": gateway, "ANTHROPIC_API_KEY": "sk-ant-test-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
        "ENABLE_TOOL_SEARCH": "false", "PATH": os.environ.get("PATH", ""),
    }  # fmt: skip


def claude(prompt: str, workdir: Path, env: dict[str, str], *extra: str) -> dict[str, Any]:
    cmd = [str(CLAUDE), "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions", *extra]
    done = run_agent(cmd, env, workdir)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_claude_code_through_the_gateway(llm_upstream: UpstreamServer, gateway: str, workdir: Path, tmp_path: Path
                                         ) -> None:  # fmt: skip
    need(CLAUDE)
    env = claude_env(tmp_path / "home", gateway)
    first = claude(TASK, workdir, env)
    assert not first["is_error"] and first["result"].strip() == f"ANSWER: {FACT}", explain(
        llm_upstream, first["result"]
    )
    second = claude(SECOND_TASK, workdir, env, "--continue")
    size = len(big_document().encode())
    assert not second["is_error"] and second["result"].strip() == f"ANSWER: {size} data.json", second

    received = llm_upstream.received("anthropic")
    assert all(r.status == 200 for r in received), [(r.status, r.error) for r in received if r.status != 200]
    main = [r for r in received if any(t.get("name") == "Bash" for t in r.json.get("tools", []))]
    assert len(main) >= 5  # task 1: run, search (answered by the gateway), answer; task 2: run, answer
    check_offload_and_retrieval("anthropic", main, "cat data.json", big_document())
    check_cache("anthropic", main)


# -- Codex CLI --------------------------------------------------------------------------------------------------
def codex_home(home: Path, gateway: str) -> dict[str, str]:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "gpt-5"\nmodel_provider = "local"\n[model_providers.local]\nname = "local"\n'
        f'base_url = "{gateway}/v1"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
    )
    return {"HOME": str(home), "OPENAI_API_KEY": "sk-test-key", "PATH": os.environ.get("PATH", "")}


def codex(args: list[str], workdir: Path, env: dict[str, str], out: Path) -> str:
    run_agent([str(CODEX), "exec", *args[:-1], "--skip-git-repo-check", "-o", str(out), args[-1]], env, workdir)
    return out.read_text().strip()


def test_codex_through_the_gateway(llm_upstream: UpstreamServer, gateway: str, workdir: Path, tmp_path: Path) -> None:
    need(CODEX)
    env = codex_home(tmp_path / "home", gateway)
    assert codex([TASK], workdir, env, tmp_path / "first.txt") == f"ANSWER: {FACT}"
    size = len(big_document(CODEX_RECORDS).encode())
    assert (
        codex(["resume", "--last", SECOND_TASK], workdir, env, tmp_path / "second.txt") == f"ANSWER: {size} data.json"
    )

    received = llm_upstream.received("responses")
    assert all(r.status == 200 for r in received), [(r.status, r.error) for r in received if r.status != 200]
    main = [r for r in received if any(t.get("name") == "exec_command" for t in r.json.get("tools", []))]
    assert len(main) >= 5
    check_offload_and_retrieval("responses", main, "cat data.json", big_document(CODEX_RECORDS))
    check_cache("responses", main)
