"""The real agents through `mcp-offload wrap`, headless, against the scripted upstream (tests/llm_upstream): wrap starts
a gateway for the run in front of the upstream (`--*-upstream`), points the agent at it without writing its
configuration, the agent runs a command whose big output hides a planted fact, the gateway offloads it and its
retrieval finds the fact, and the agent prints it. HOME is snapshot before and after: nothing outside mcp-offload's
own directories and the agent's own directory (its session state) changed, and the user's own settings files there are
byte-identical."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import ApiKind, UpstreamServer, extends
from mcp_offload.tokens import load_counter
from support.agents import AGENTS, CLAUDE, CLINE, CODEX, COPILOT, COPILOT_CACHE, GEMINI, need
from support.wrap import OWN_DIRS
from support.wrap import run_wrapped as wrapped

pytestmark = pytest.mark.real_agent

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

FACT = "PLANTED-" + random.Random(26).randbytes(6).hex()
TASK = f"Find the deploy key in data.json.\n@run cat data.json\n@search {FACT[:8]}\n@answer PLANTED-[0-9a-f]{{12}}"
# each agent's own directory, where it keeps its session state on any run (with or without wrap); its configuration
# files there (USER_FILES, NOT_CREATED) must be left as they were
AGENT_DIRS = {
    "claude": (".claude/", ".claude.json"), "codex": (".codex/",), "gemini": (".gemini/",), "copilot": (".copilot/",),
    "cline": (".cline/",),
}  # fmt: skip
NOT_CREATED = (".claude/settings.local.json", ".codex/config.json", ".gemini/.env")
USER_FILES = {  # a user's own settings, which wrap must leave as they are
    ".claude/settings.json": '{"theme": "dark"}\n',
    ".codex/config.toml": 'model = "gpt-5"\n',
    ".gemini/settings.json": json.dumps(
        {"general": {"disableAutoUpdate": True, "maxAttempts": 2}, "privacy": {"usageStatisticsEnabled": False}}
    ),
}


def big_document(count: int) -> str:
    """JSON over the gateway's threshold, the fact in the middle: 150 records (~14 KB) fit Claude Code's and Gemini
    CLI's own inline limits; Codex keeps ~10 KB of a command's output (head and tail), so it gets 60."""
    rng = random.Random(5)
    records: list[dict[str, Any]] = [
        {"id": i, "host": f"node-{i:03d}", "status": rng.choice(["ok", "down"]), "note": f"chk {rng.randint(1, 9999)}"}
        for i in range(count)
    ]  # fmt: skip
    records[count // 2]["note"] = f"rotated the deploy key, now {FACT}"
    return json.dumps({"service": "inventory", "records": records}, indent=1)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for name, text in USER_FILES.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return home


def run_wrapped(agent: str, argv: list[str], upstream: UpstreamServer, home: Path, tmp_path: Path, **env: str) -> str:
    """`mcp-offload wrap` with a gateway in front of the scripted upstream; the agent's stdout. Checks HOME."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.json").write_text(big_document(60 if agent in ("codex", "cline") else 150))
    run = wrapped(agent, argv, upstream, home, work, env, path=(AGENTS / ".bin",))
    outside = sorted(p for p in run.touched if not p.startswith(OWN_DIRS + AGENT_DIRS[agent]))
    assert not outside, f"{agent} through wrap changed files outside mcp-offload's and its own directory: {outside}"
    for name, text in USER_FILES.items():
        assert (home / name).read_text() == text, f"{name} changed"
    assert not [name for name in NOT_CREATED if (home / name).exists()]
    assert any(p.startswith(".local/share/mcp-offload/store/") for p in run.touched), "the gateway stored nothing"
    return run.done.stdout


def offloaded_and_found(upstream: UpstreamServer, records: int) -> None:
    """The big result reached the upstream as a reference, never whole (the agent's answer shows the retrieval)."""
    bodies = [json.dumps(r.json, ensure_ascii=False) for r in upstream.requests]
    assert any("Stored as out_" in b for b in bodies), "nothing was offloaded"
    escaped = json.dumps(big_document(records), ensure_ascii=False)[1:-1]
    middle = escaped[escaped.index(FACT) - 600 : escaped.index(FACT) + 600]  # as a request body carries it
    assert not any(middle in b for b in bodies), "the document reached the upstream whole"
    stored = next(m for b in bodies for m in re.findall(r'"(Stored as out_(?:[^"\\]|\\.)*)"', b))
    shown = json.loads(f'"{stored}"')
    tokens = load_counter("o200k_base").count(shown)
    print(
        f"the model saw of the first big result: {len(shown.encode()):,} bytes, {tokens:,} o200k tokens "
        f"(the document: {len(big_document(records).encode()):,} bytes)"
    )


def no_prefix_break(upstream: UpstreamServer, api: ApiKind) -> None:
    """Every request was valid, and each one with tools extends the one before, but for the request on which the
    gateway appended its retrieval tools (once): its messages still extend the previous ones."""
    received = upstream.received(api)
    assert received and all(r.status == 200 for r in received), [(r.status, r.error) for r in received]
    main = [r.json for r in received if r.json.get("tools")]
    appended = 0
    for earlier, later in itertools.pairwise(main):
        if extends(api, earlier, later):
            continue
        assert extends(api, {**earlier, "tools": []}, {**later, "tools": []}), "an already-sent message changed"
        assert later["tools"][: len(earlier["tools"])] == earlier["tools"], "an already-sent tool changed"
        appended += 1
    assert appended == 1, f"the tools changed on {appended} requests (the retrieval tools are appended once)"


def test_claude_code_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    need(CLAUDE)
    argv = ["-p", TASK, "--output-format", "json", "--dangerously-skip-permissions"]
    out = run_wrapped(
        "claude", argv, llm_upstream, home, tmp_path, ANTHROPIC_API_KEY="sk-ant-test-key", IS_SANDBOX="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", ENABLE_TOOL_SEARCH="false",
    )  # fmt: skip
    result = json.loads(out.strip().splitlines()[-1])
    assert not result["is_error"] and result["result"].strip() == f"ANSWER: {FACT}", result
    offloaded_and_found(llm_upstream, 150)


CLAUDE_HEADLESS = {"IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                   "ENABLE_TOOL_SEARCH": "false"}  # fmt: skip
USER_AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull}  # fmt: skip


def test_claude_code_on_bedrock_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """The user's Claude Code is on Bedrock (CLAUDE_CODE_USE_BEDROCK, their AWS credentials, their Bedrock endpoint):
    wrap points it at the gateway's Bedrock route and sends the gateway's requests to that endpoint, signed with the
    same credentials (the scripted Bedrock checks every signature)."""
    need(CLAUDE)
    argv = ["-p", TASK, "--output-format", "json", "--dangerously-skip-permissions"]
    out = run_wrapped("claude", argv, llm_upstream, home, tmp_path, CLAUDE_CODE_USE_BEDROCK="1",
                      ANTHROPIC_BEDROCK_BASE_URL=llm_upstream.base_url, **USER_AWS, **CLAUDE_HEADLESS)  # fmt: skip
    result = json.loads(out.strip().splitlines()[-1])
    assert not result["is_error"] and result["result"].strip() == f"ANSWER: {FACT}", result
    offloaded_and_found(llm_upstream, 150)
    sent = llm_upstream.received("anthropic", cloud="bedrock")
    assert sent and all(r.status == 200 for r in sent), [(r.status, r.error) for r in sent]
    assert all(r.path.startswith("/model/") for r in sent) and not [r for r in llm_upstream.requests if not r.cloud]


def test_claude_code_on_vertex_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """The user's Claude Code is on Vertex AI (CLAUDE_CODE_USE_VERTEX, its region and project, its endpoint; the
    OAuth token as its custom header, Google's libraries being out of reach here): wrap points it at the gateway's
    Vertex route and the token passes through to that endpoint."""
    need(CLAUDE)
    argv = ["-p", TASK, "--output-format", "json", "--dangerously-skip-permissions"]
    out = run_wrapped("claude", argv, llm_upstream, home, tmp_path, CLAUDE_CODE_USE_VERTEX="1",
                      CLOUD_ML_REGION="us-east5", ANTHROPIC_VERTEX_PROJECT_ID="test-project",
                      ANTHROPIC_VERTEX_BASE_URL=llm_upstream.base_url + "/v1", CLAUDE_CODE_SKIP_VERTEX_AUTH="1",
                      ANTHROPIC_CUSTOM_HEADERS="Authorization: Bearer ya29.vertex-test-token",
                      **CLAUDE_HEADLESS)  # fmt: skip
    result = json.loads(out.strip().splitlines()[-1])
    assert not result["is_error"] and result["result"].strip() == f"ANSWER: {FACT}", result
    offloaded_and_found(llm_upstream, 150)
    sent = llm_upstream.received("anthropic", cloud="vertex")
    assert sent and all(r.status == 200 for r in sent), [(r.status, r.error) for r in sent]
    assert all(r.headers["authorization"] == "Bearer ya29.vertex-test-token" for r in sent)


def test_codex_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """Codex gets its provider from `-c` overrides: its config.toml (here the user's own, naming no provider) is not
    written, and the requests reach the gateway, not the public host."""
    need(CODEX)
    answer = tmp_path / "answer.txt"
    run_wrapped("codex", ["exec", "--skip-git-repo-check", "-o", str(answer), TASK], llm_upstream, home, tmp_path,
                OPENAI_API_KEY="sk-test-key")  # fmt: skip
    assert answer.read_text().strip() == f"ANSWER: {FACT}"
    offloaded_and_found(llm_upstream, 60)


def test_gemini_cli_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """Gemini CLI runs headless with a base URL only with an auth type selected: wrap selects it in a home of its own
    (GEMINI_CLI_HOME), and the user's ~/.gemini/settings.json (which selects none) stays as it was."""
    need(GEMINI)
    out = run_wrapped("gemini", ["-p", TASK, "--yolo", "-m", "gemini-2.5-flash"], llm_upstream, home, tmp_path,
                      GEMINI_API_KEY="test-gemini-key", GEMINI_CLI_TRUST_WORKSPACE="true")  # fmt: skip
    assert f"ANSWER: {FACT}" in out, out[-2000:]
    offloaded_and_found(llm_upstream, 150)


def test_copilot_cli_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """Copilot CLI with a provider of the user's own (BYOK: its key and model in COPILOT_PROVIDER_* variables) is
    pointed by COPILOT_PROVIDER_BASE_URL alone; nothing is written into ~/.copilot but its own session state."""
    need(COPILOT)
    out = run_wrapped(
        "copilot", ["-p", TASK, "--allow-all-tools", "-s"], llm_upstream, home, tmp_path,
        COPILOT_PROVIDER_API_KEY="sk-test-key", COPILOT_MODEL="gpt-4.1", COPILOT_OFFLINE="true",
        COPILOT_AUTO_UPDATE="false", XDG_CACHE_HOME=str(COPILOT_CACHE),  # its unpacked package, shared
    )  # fmt: skip
    assert out.rstrip().endswith(f"ANSWER: {FACT}"), out[-2000:]
    offloaded_and_found(llm_upstream, 150)
    no_prefix_break(llm_upstream, "openai_chat")


def cline_hubs(work: Path) -> list[int]:
    """The Cline hub daemons (`cline --cline-hub-daemon --cwd WORK`, which Cline 3.0.65 starts detached and leaves
    running) of runs in `work`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--cline-hub-daemon" in args and str(work).encode() in args:
            found.append(int(proc.name))
    return found


def stop_cline_hubs(work: Path) -> None:
    for pid in cline_hubs(work):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def test_cline_through_wrap(llm_upstream: UpstreamServer, home: Path, tmp_path: Path) -> None:
    """Cline's provider settings (the user's ~/.cline/data/settings/providers.json: an openai-compatible provider, its
    key and its base URL) are copied under mcp-offload's data directory with the gateway as base URL and named by
    CLINE_PROVIDER_SETTINGS_PATH; the user's base URL becomes the gateway's upstream. The user's file stays as it was.
    The document is 60 records: Cline itself cuts a tool result to 8,000 characters before any request carries it."""
    need(CLINE)
    provider = {"provider": "openai-compatible", "apiKey": "sk-test-key", "model": "gpt-4.1",
                "baseUrl": llm_upstream.openai_url}  # fmt: skip
    user_file = home / ".cline" / "data" / "settings" / "providers.json"
    user_file.parent.mkdir(parents=True)
    text = json.dumps({"version": 1, "lastUsedProvider": "openai-compatible", "modes": {}, "providers": {
        "openai-compatible": {"settings": provider, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"},
    }}, indent=2)  # fmt: skip
    user_file.write_text(text)
    (user_file.parent / "global-settings.json").write_text('{"telemetryOptOut": true}')
    try:
        out = run_wrapped("cline", ["--json", TASK], llm_upstream, home, tmp_path)
        left = cline_hubs(tmp_path / "work")
    finally:
        stop_cline_hubs(tmp_path / "work")
    # the run's hub was its own (its record under mcp-offload's data directory, on a port of its own) and is stopped:
    # a later plain `cline` finds no hub of wrap's, and so no gateway that has gone
    assert not left, f"the hub daemon of wrap's run is still running: {left}"
    assert not (home / ".cline/data/locks/hub").exists(), "wrap's run wrote the user's hub discovery record"
    assert not list((home / ".local/share/mcp-offload/cline").glob("hubs/*")), "the run's hub record was left"
    assert user_file.read_text() == text, "the user's provider settings changed"
    assert json.loads(out.strip().splitlines()[-1])["text"].endswith(f"ANSWER: {FACT}"), out[-2000:]
    offloaded_and_found(llm_upstream, 60)
    no_prefix_break(llm_upstream, "openai_chat")
