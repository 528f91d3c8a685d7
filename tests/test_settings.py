"""Settings: `from_env` coerces each MCP_OFFLOAD_* variable to its field's type (a bad value is a `SettingsError`
naming the variable, one line on the CLI's stderr), `with_overrides` keeps what a flag left unset, and the store
limits follow the settings."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_offload.errors import SettingsError
from mcp_offload.settings import Settings, default_store_dir
from mcp_offload.store.lifecycle import StoreLimits


def test_from_env_coerces_each_type() -> None:
    settings = Settings.from_env(
        {
            "MCP_OFFLOAD_PREVIEW_TOKENS": "123",  # int
            "MCP_OFFLOAD_JQ_TIMEOUT_S": "2.5",  # float
            "MCP_OFFLOAD_STORE_TTL_S": "60",  # float given as an integer
            "MCP_OFFLOAD_ENCODING": "cl100k_base",  # str
            "MCP_OFFLOAD_JQ_LIBRARY": " /usr/lib/libjq.so.1 ",  # str, kept as given
        }
    )
    assert settings.preview_tokens == 123 and type(settings.preview_tokens) is int
    assert settings.jq_timeout_s == 2.5 and type(settings.jq_timeout_s) is float
    assert settings.store_ttl_s == 60.0 and type(settings.store_ttl_s) is float
    assert settings.encoding == "cl100k_base"
    assert settings.jq_library == " /usr/lib/libjq.so.1 "
    untouched = {f.name for f in dataclasses.fields(Settings)} - {
        "preview_tokens", "jq_timeout_s", "store_ttl_s", "encoding", "jq_library"
    }  # fmt: skip
    assert all(getattr(settings, name) == getattr(Settings(), name) for name in untouched)


def test_from_env_ignores_other_variables_and_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env({"MCP_OFFLOAD_NO_SUCH_KNOB": "1", "PREVIEW_TOKENS": "7"}) == Settings()
    monkeypatch.setenv("MCP_OFFLOAD_READ_MAX_TOKENS", "777")
    monkeypatch.setenv("MCP_OFFLOAD_STORE", "/tmp/somewhere")
    settings = Settings.from_env()
    assert (settings.read_max_tokens, settings.store) == (777, "/tmp/somewhere")


def test_every_field_has_a_type_from_env_can_read() -> None:
    """A field of another type would silently be set to the raw string: every knob is int, float, bool or str."""
    assert {str(f.type) for f in dataclasses.fields(Settings)} <= {"int", "float", "bool", "str"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("TRUE", True), (" yes ", True), ("on", True),
     ("0", False), ("false", False), ("no", False), ("off", False), ("", False), ("maybe", False)],
)  # fmt: skip
def test_bool_values(raw: str, expected: bool) -> None:
    """Settings has no bool knob today: a subclass with one checks the rule `from_env` carries for it."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class WithFlag(Settings):
        flag: bool = not expected

    assert WithFlag.from_env({"MCP_OFFLOAD_FLAG": raw}).flag is expected


@pytest.mark.parametrize(
    ("variable", "raw", "detail"),
    [
        ("MCP_OFFLOAD_PREVIEW_TOKENS", "many", "not a valid int"),
        ("MCP_OFFLOAD_JQ_WORKERS", "2.5", "not a valid int"),
        ("MCP_OFFLOAD_MAX_OUTPUT_BYTES", "", "'' is not a size like 512, 64KB, 1MiB, 1GiB"),
        ("MCP_OFFLOAD_MAX_OUTPUT_BYTES", "1 parsec", "is not a size like"),
        ("MCP_OFFLOAD_JQ_TIMEOUT_S", "ten", "'ten' is not a duration like 90s, 15m, 2h, 3d"),
    ],
)
def test_a_bad_value_stops_with_the_variable_name(variable: str, raw: str, detail: str) -> None:
    """An operator error (SettingsError: one line on stderr, exit 2 in the CLI), not a SystemExit from below it."""
    with pytest.raises(SettingsError) as excinfo:
        Settings.from_env({variable: raw})
    assert str(excinfo.value).startswith(variable) and detail in str(excinfo.value)


def test_sizes_and_durations_take_units_in_the_environment() -> None:
    settings = Settings.from_env(
        {
            "MCP_OFFLOAD_STORE_TTL_S": "3d",
            "MCP_OFFLOAD_MAX_OUTPUT_BYTES": "1GiB",
            "MCP_OFFLOAD_STORE_MAX_BYTES": "10GB",
            "MCP_OFFLOAD_JQ_TIMEOUT_S": "1500ms",
            "MCP_OFFLOAD_STORE_SESSION_MAX_BYTES": "4096",
        }
    )
    assert settings.store_ttl_s == 3 * 86400 and settings.max_output_bytes == 1024**3
    assert settings.store_max_bytes == 10 * 1000**3 and settings.jq_timeout_s == 1.5
    assert settings.store_session_max_bytes == 4096 and type(settings.store_session_max_bytes) is int


@pytest.mark.parametrize("command", [[], ["outputs", "list"], ["stats"]])
def test_the_cli_reports_a_bad_variable_in_one_line(command: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "MCP_OFFLOAD_JQ_WORKERS": "2.5", "MCP_OFFLOAD_STORE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "mcp_offload", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    prog = "mcp-offload stats" if command == ["stats"] else "mcp-offload"
    assert (done.returncode, done.stderr) == (2, f"{prog}: MCP_OFFLOAD_JQ_WORKERS='2.5' is not a valid int\n")


def test_with_overrides_ignores_none() -> None:
    base = Settings(store="/data/store", preview_tokens=300)
    changed = base.with_overrides(store=None, preview_tokens=900, encoding=None, jq_workers=4)
    assert changed.store == "/data/store" and changed.encoding == base.encoding  # None: left as it was
    assert (changed.preview_tokens, changed.jq_workers) == (900, 4)
    assert base.preview_tokens == 300  # frozen: a new instance
    assert base.with_overrides(store=None) == base
    with pytest.raises(TypeError):
        base.with_overrides(no_such_knob=1)


def test_store_location_defaults_to_the_user_data_dir() -> None:
    assert Settings().store_location() == str(default_store_dir())
    assert default_store_dir().name == "store" and "mcp-offload" in str(default_store_dir())
    assert Settings(store="redis://h:6379/0").store_location() == "redis://h:6379/0"


def test_store_limits_from_settings() -> None:
    settings = Settings(
        store_ttl_s=120.0,
        store_session_max_bytes=1000,
        store_session_max_outputs=7,
        store_max_bytes=5000,
        store_max_outputs=70,
        store_sweep_interval_s=9.0,
    )
    limits = StoreLimits.from_settings(settings)
    assert limits == StoreLimits(
        ttl_s=120.0,
        scope_max_bytes=1000,
        scope_max_outputs=7,
        max_bytes=5000,
        max_outputs=70,
        tombstone_ttl_s=120.0,  # tombstones live as long as outputs
        sweep_interval_s=9.0,
    )
    with pytest.raises(ValueError, match="scope_max_outputs must be positive"):
        StoreLimits.from_settings(Settings(store_session_max_outputs=0))


def test_store_limits_defaults_equal_the_settings_defaults() -> None:
    assert StoreLimits() == StoreLimits.from_settings(Settings())
    defaults = Settings()
    assert (StoreLimits().ttl_s, StoreLimits().max_bytes) == (defaults.store_ttl_s, defaults.store_max_bytes)
