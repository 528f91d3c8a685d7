"""Store locations that name no store: refused at start with one line and exit status 1, nothing created.

A URL of a scheme no backend knows (`foo://x`, `http://…`, a typo such as `redis+clustr://…`) used to be taken for
a directory: the server started and created a folder named `foo:` in its working directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_offload.compact import Compactor
from mcp_offload.errors import SettingsError
from mcp_offload.store import StoreLocationError, open_store, store_kind
from support import free_port

UNKNOWN = ["foo://x", "http://127.0.0.1:6379", "file:///tmp/store", "redis+clustr://127.0.0.1:7000", "Redis://h"]


@pytest.mark.parametrize(
    ("location", "kind"),
    [
        ("redis://127.0.0.1:6379/0", "redis"),
        ("rediss://h:6380/1", "redis"),
        ("valkey://h", "redis"),
        ("valkeys://h", "redis"),
        ("unix:///run/redis.sock", "redis"),
        ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "cluster"),
        ("rediss+cluster://h:7000", "cluster"),
        ("valkey+cluster://h:7000", "cluster"),
        ("/var/lib/mcp-offload", "fs"),
        ("relative/store", "fs"),
        ("C:\\store", "fs"),
        ("store:with:colons", "fs"),
    ],
)
def test_store_kind(location: str, kind: str) -> None:
    assert store_kind(location) == kind


@pytest.mark.parametrize("location", UNKNOWN)
def test_unknown_schemes_are_refused_before_anything_is_created(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreLocationError, match="unknown scheme") as raised:
        open_store(location)
    assert "\n" not in str(raised.value)
    with pytest.raises(SettingsError, match="unknown scheme"):
        Compactor(store=location, session="s")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "front_end",
    [[], ["--transport", "http", "--port", str(free_port())], ["gateway"], ["outputs", "list"], ["stats"]],
    ids=["mcp-stdio", "mcp-http", "gateway", "outputs", "stats"],
)
def test_every_front_end_refuses_an_unknown_scheme_with_one_line(front_end: list[str], tmp_path: Path) -> None:
    exe = str(Path(sys.executable).with_name("mcp-offload"))
    done = subprocess.run(
        [exe, *front_end, "--store", "foo://x"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "unknown scheme 'foo://'" in done.stderr and "nothing was created" in done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []
