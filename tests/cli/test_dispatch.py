"""The command line's surface: usage generated from the dispatcher's table, -V, --log-level choices, units on
sizes and durations, `demo --help` and `demo --store`, and what the outputs/stores say when something is missing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_offload.cli import dispatch
from mcp_offload.cli.dispatch import SUBCOMMANDS, Subcommand, settings_from_args
from mcp_offload.version import __version__
from support import HANG_TIMEOUT_S

EXE = str(Path(sys.executable).with_name("mcp-offload"))


def _run(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_top_level_help_lists_every_subcommand_and_the_level_choices() -> None:
    done = _run("--help")
    assert done.returncode == 0
    usage = done.stdout.split("\n\n")[0]
    assert "{" + ",".join(SUBCOMMANDS) + "}" in usage and "[serve]" in usage
    for name, command in SUBCOMMANDS.items():
        assert f"  {name}" in done.stdout and command.summary in done.stdout
    assert "--log-level {DEBUG,INFO,WARNING,ERROR}" in done.stdout


def test_the_listing_follows_the_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A subcommand added to the table (as `gateway` will be) shows up in the usage and the help by itself."""
    extra = Subcommand("frobnicate", "mcp_offload.cli.stats", "a command added later")
    monkeypatch.setitem(SUBCOMMANDS, "frobnicate", extra)
    with pytest.raises(SystemExit):
        dispatch.main(["--help"])
    out = capsys.readouterr().out
    assert "frobnicate" in out.split("\n\n")[0] and "  frobnicate" in out and "a command added later" in out


def test_version_short_and_long() -> None:
    for flag in ("-V", "--version"):
        done = _run(flag)
        assert done.returncode == 0 and done.stdout.strip() == f"mcp-offload {__version__}"


def test_a_bad_log_level_names_the_choices() -> None:
    done = _run("--log-level", "loud")
    assert done.returncode == 2 and "(choose from 'DEBUG', 'INFO', 'WARNING', 'ERROR')" in done.stderr


def test_sizes_and_durations_take_units() -> None:
    args = dispatch._parser().parse_args(
        ["--store-ttl", "3d", "--max-output-bytes", "1GiB", "--store-max-bytes", "10GB", "--jq-timeout", "1m",
         "--store-session-max-bytes", "512MiB", "--max-body-bytes", "64MiB", "--session-idle-timeout", "2h"]
    )  # fmt: skip
    settings = settings_from_args(args)
    assert settings.store_ttl_s == 3 * 86400 and settings.max_output_bytes == 1024**3
    assert settings.store_max_bytes == 10 * 10**9 and settings.jq_timeout_s == 60
    assert settings.store_session_max_bytes == 512 * 1024**2
    assert args.max_body_bytes == 64 * 1024**2 and args.session_idle_timeout == 7200
    bare = settings_from_args(dispatch._parser().parse_args(["--store-ttl", "90", "--max-output-bytes", "1000"]))
    assert bare.store_ttl_s == 90 and bare.max_output_bytes == 1000  # bare numbers: seconds and bytes
    done = _run("--max-output-bytes", "1 gigabyte")
    assert done.returncode == 2 and "is not a size like 512, 64KB, 1MiB, 1GiB" in done.stderr


def test_demo_help_is_the_demos_own() -> None:
    done = _run("demo", "--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: mcp-offload demo")
    assert "--store" in done.stdout and "--transport" not in done.stdout and "--token" not in done.stdout
    rejected = _run("demo", "--transport", "http")
    assert rejected.returncode == 2 and "unrecognized arguments: --transport" in rejected.stderr


def test_demo_store_is_honoured(tmp_path: Path) -> None:
    store = tmp_path / "kept"
    done = _run("demo", "--store", str(store), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"outputs list --store {store}" in done.stdout
    listed = _run("outputs", "list", "--store", str(store), "--json")
    names = {o["name"] for o in json.loads(listed.stdout)}
    assert {"GitHub issues API response", "service log"} <= names


@pytest.mark.parametrize(
    "action", [["list"], ["list", "--json"], ["show", "out_" + "a" * 26], ["gc"], ["clear", "--yes"]]
)
def test_outputs_on_a_missing_store_says_so_and_creates_nothing(tmp_path: Path, action: list[str]) -> None:
    typo = tmp_path / "stroe"
    done = _run("outputs", *action[:1], "--store", str(typo), *action[1:])
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        f"mcp-offload: no store at {typo}: the directory does not exist (check --store or MCP_OFFLOAD_STORE)"
    )
    assert not typo.exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    done = _run("outputs", "list", "--store", str(plain))
    assert done.returncode == 1 and "is not an mcp-offload store" in done.stderr
    assert list(plain.iterdir()) == []  # nothing created in a directory that is not a store


def test_demo_help_answers_without_importing_the_mcp_sdk() -> None:
    """Help is for reading: the MCP SDK (a second of CPU to import) is imported only when the demo runs."""
    script = (
        "import sys\n"
        "from mcp_offload.cli import dispatch\n"
        "try:\n"
        "    dispatch.main(['demo', '--help'])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'mcp' in sys.modules, 'mcp_offload.cli.demo' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    assert done.stdout.startswith("usage: mcp-offload demo"), done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "exit 0 False True"
