"""`mcp-offload wrap openclaw` as a process: OpenClaw is pointed by OPENCLAW_CONFIG_PATH at a config of mcp-offload's
own that `$include`s the user's (JSON5, found as OpenClaw finds it) and lays the gateway over the built-in providers'
base URLs, with the adapter each speaks; the user's config directory in OPENCLAW_INCLUDE_ROOTS; a base URL the user
gave one of them named as the upstream; the user's files untouched; what wrap cannot read or point refused in one line
with nothing started. Reading OpenClaw's config (`$include` merging, `${NAME}`) is tested on its own below. (The real
OpenClaw through wrap: tests/gateway/test_wrap_more_agents.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.cli.wrap.agents.base import WrapError
from mcp_offload.cli.wrap.agents.openclaw_config import load_config, substitute
from support import free_port
from support.wrap import WRAP, changed, snapshot, wrap_env

USER = """{
  // the user's own, JSON5
  logging: { level: "info" },
  models: {
    $include: "./models.json5",
    providers: { openai: { baseUrl: "${CORP_PROXY}/v1", api: "openai-completions" } },
  },
}
"""
MODELS = "{ mode: 'merge', providers: { local: { baseUrl: 'http://127.0.0.1:11434/v1', models: [] } } }"


def wrap(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in wrap_env(home).items() if not k.startswith("OPENCLAW_")}
    return subprocess.run([*WRAP, *argv], env={**base, **env}, capture_output=True, text=True, timeout=60)


def exported(stdout: str) -> dict[str, str]:
    return dict(line.removeprefix("export ").split("=", 1) for line in stdout.splitlines() if line.startswith("export"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".openclaw").mkdir(parents=True)
    (home / ".openclaw/openclaw.json").write_text(USER)
    (home / ".openclaw/models.json5").write_text(MODELS)
    return home


def test_print_env_names_a_config_that_includes_the_users(home: Path) -> None:
    before = snapshot(home)
    port = free_port()
    done = wrap(home, "--port", str(port), "--print-env", "openclaw", CORP_PROXY="http://10.1.2.3:4000")
    gw = f"http://127.0.0.1:{port}"
    own = home / f".local/share/mcp-offload/openclaw/{port}/openclaw.json"
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"export OPENCLAW_CONFIG_PATH={own}",
        f"export OPENCLAW_INCLUDE_ROOTS={home / '.openclaw'}",
        f"# wrote {own}",
        "# its own settings send it to http://10.1.2.3:4000/v1: start the gateway with --openai-upstream "
        "http://10.1.2.3:4000/v1",
    ]
    assert json.loads(own.read_text()) == {
        "$include": str(home / ".openclaw/openclaw.json"),
        "models": {
            "providers": {
                "anthropic": {"baseUrl": gw, "api": "anthropic-messages"},
                "openai": {"baseUrl": f"{gw}/v1", "api": "openai-completions"},  # the user's adapter, kept
                "google": {"baseUrl": f"{gw}/v1beta", "api": "google-generative-ai"},
            }
        },
    }
    outside = [p for p in changed(before, snapshot(home)) if not p.startswith(".local/share/mcp-offload/")]
    assert not outside, f"wrap wrote outside its own data directory: {outside}"


def test_the_users_include_roots_are_kept_and_a_base_url_without_adapter_is_chat(home: Path, tmp_path: Path) -> None:
    """OpenClaw treats a provider with a baseUrl and no adapter as Chat Completions: so does wrap."""
    (home / ".openclaw/openclaw.json").write_text('{models: {providers: {anthropic: {baseUrl: "http://a.ex/"}}}}')
    port = free_port()
    done = wrap(home, "--port", str(port), "--print-env", "openclaw", OPENCLAW_INCLUDE_ROOTS="/srv/shared")
    assert exported(done.stdout)["OPENCLAW_INCLUDE_ROOTS"] == f"{home / '.openclaw'}:/srv/shared"
    own = Path(exported(done.stdout)["OPENCLAW_CONFIG_PATH"])
    anthropic = json.loads(own.read_text())["models"]["providers"]["anthropic"]
    assert anthropic == {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions"}
    assert "--openai-upstream http://a.ex" in done.stdout


def test_a_user_without_a_config_gets_the_providers_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = wrap(home, "--print-env", "openclaw")
    env = exported(done.stdout)
    assert done.returncode == 0 and set(env) == {"OPENCLAW_CONFIG_PATH"}, done
    assert "$include" not in json.loads(Path(env["OPENCLAW_CONFIG_PATH"]).read_text())


@pytest.mark.parametrize(
    ("where", "found"),
    [
        ("OPENCLAW_CONFIG_PATH", "elsewhere/mine.json"),  # named by the user
        ("OPENCLAW_STATE_DIR", "state/openclaw.json"),  # in the state directory the user set
        ("OPENCLAW_HOME", "oc-home/.openclaw/openclaw.json"),  # under OpenClaw's own home
        (None, ".clawdbot/clawdbot.json"),  # the legacy name and directory
    ],
)
def test_the_users_config_is_found_where_openclaw_looks(where: str | None, found: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / found
    config.parent.mkdir(parents=True)
    config.write_text("{}")
    env = {where: str(config.parent.parent if where == "OPENCLAW_HOME" else config)} if where else {}
    if where == "OPENCLAW_STATE_DIR":
        env = {where: str(config.parent)}
    done = wrap(home, "--print-env", "openclaw", **env)
    own = Path(exported(done.stdout)["OPENCLAW_CONFIG_PATH"])
    assert json.loads(own.read_text())["$include"] == str(config), done


def test_wraps_own_config_in_the_variable_is_not_taken_for_the_users(home: Path) -> None:
    """After `eval "$(mcp-offload wrap --print-env openclaw)"`, OPENCLAW_CONFIG_PATH names wrap's own file: the next
    run still includes the user's (including its own file would loop)."""
    port = str(free_port())
    first = wrap(home, "--port", port, "--print-env", "openclaw", CORP_PROXY="http://p")
    own = exported(first.stdout)["OPENCLAW_CONFIG_PATH"]
    second = wrap(home, "--port", port, "--print-env", "openclaw", CORP_PROXY="http://p", OPENCLAW_CONFIG_PATH=own)
    assert second.stdout == first.stdout, second.stderr
    assert json.loads(Path(own).read_text())["$include"] == str(home / ".openclaw/openclaw.json")


REFUSED = [
    ('{models: {providers: {openai: {api: "azure-openai-responses"}}}}', {}, "models.providers.openai.api is "
     "'azure-openai-responses'; the gateway serves anthropic-messages, openai-responses, openai-completions, "
     "google-generative-ai: run OpenClaw without wrap"),
    ('{models: {providers: {google: {baseUrl: "${NOPE}"}}}}', {}, "models.providers.google.baseUrl names ${NOPE}, "
     "which is not set in this environment"),
    ("{models: [1, 2", {}, "as JSON5"),
    ('{$include: "./gone.json5"}', {}, "cannot read OpenClaw's config"),
    ("{}", {"OPENCLAW_PROFILE": "work"}, "OPENCLAW_PROFILE='work': wrap points OpenClaw's default profile only; "
     "unset it"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "env", "message"), REFUSED)
def test_what_wrap_cannot_read_or_point_is_refused_in_one_line(
    home: Path, text: str, env: dict[str, str], message: str
) -> None:
    (home / ".openclaw/openclaw.json").write_text(text)
    done = wrap(home, "--print-env", "openclaw", **env)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.splitlines()[-1].startswith("mcp-offload wrap: ") and message in done.stderr, done.stderr
    assert (home / ".openclaw/openclaw.json").read_text() == text


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["agent", "exec", "--config", "x.json", "hi"], "OpenClaw --config reads another config"),
        (["--profile=work", "agent", "exec", "hi"], "OpenClaw --profile reads another config"),
        (["--dev", "tui"], "OpenClaw --dev reads another config"),
        (["agent", "exec", "--isolated", "hi"], "OpenClaw --isolated reads no config, so wrap cannot point it"),
        (["agent", "exec", "--auth-env-only", "hi"], "OpenClaw --auth-env-only reads no config"),
    ],
)
def test_arguments_that_would_go_around_the_gateway_are_refused(
    home: Path, tmp_path: Path, argv: list[str], says: str
) -> None:
    bin_dir = fake_openclaw(tmp_path, "2026.9.6")
    done = wrap(home, "--port", str(free_port()), "openclaw", *argv, PATH=f"{bin_dir}:/usr/bin:/bin", CORP_PROXY="x")
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done
    assert says in done.stderr
    assert not (home / "ran").exists() and not (home / ".local").exists(), "something was run, started or written"


def test_arguments_after_the_terminator_are_the_agents_own(home: Path, tmp_path: Path) -> None:
    bin_dir = fake_openclaw(tmp_path, "2026.9.6")
    done = wrap(
        home,
        "openclaw",
        "agent",
        "exec",
        "--",
        "--config",
        PATH=f"{bin_dir}:/usr/bin:/bin",
        CORP_PROXY="http://127.0.0.1:9",
    )
    assert done.returncode == 0, done.stderr
    assert (home / "ran").read_text().startswith("ran ")


def fake_openclaw(root: Path, version: str) -> Path:
    """An npm-installed `openclaw` that records that it ran, and with which config."""
    pkg = root / "node_modules" / "openclaw"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "openclaw", "version": version}))
    (pkg / "openclaw.mjs").write_text('#!/bin/sh\necho "ran $OPENCLAW_CONFIG_PATH" > "$HOME/ran"\n')
    (pkg / "openclaw.mjs").chmod(0o755)
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "openclaw").symlink_to(pkg / "openclaw.mjs")
    return bin_dir


# -- reading OpenClaw's config, as OpenClaw does ------------------------------------------------------------------
def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / next(iter(files))


INCLUDES: list[tuple[dict[str, str], dict[str, Any]]] = [
    # one file replaces the directive's object; sibling keys are merged over it
    ({"c.json": '{"a": {"$include": "./b.json5", "y": 2}}', "b.json5": "{x: 1, y: 1}"}, {"a": {"x": 1, "y": 2}}),
    # a list of files is merged in order: objects key by key, arrays concatenated, the later value wins
    ({"c.json": '{"$include": ["p.json", "q.json"]}', "p.json": '{"l": [1], "o": {"k": 1}, "v": 1}',
      "q.json": '{"l": [2], "o": {"j": 2}, "v": 2}'}, {"l": [1, 2], "o": {"k": 1, "j": 2}, "v": 2}),
    # nested, relative to the including file
    ({"c.json": '{"$include": "sub/d.json"}', "sub/d.json": '{"$include": "e.json"}', "sub/e.json": '{"deep": true}'},
     {"deep": True}),
]  # fmt: skip


@pytest.mark.parametrize(("files", "config"), INCLUDES)
def test_includes_resolve_as_openclaw_resolves_them(
    files: dict[str, str], config: dict[str, Any], tmp_path: Path
) -> None:
    assert load_config(write(tmp_path, files)) == config


def test_includes_nest_at_most_ten_levels(tmp_path: Path) -> None:
    path = write(tmp_path, {"loop.json": '{"$include": "loop.json"}'})
    with pytest.raises(WrapError, match="nests deeper than 10 levels"):
        load_config(path)


def test_variables_are_substituted_and_escaped() -> None:
    env = {"HOST": "h.ex", "lower": "x"}
    assert substitute("https://${HOST}/v1 $${HOST} ${lower}", env, "w") == "https://h.ex/v1 ${HOST} ${lower}"
    with pytest.raises(WrapError, match=r"w names \$\{EMPTY\}, which is not set"):
        substitute("${EMPTY}", {"EMPTY": ""}, "w")
