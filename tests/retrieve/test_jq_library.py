"""Which libjq the workers load: "auto" takes the cached -O2 build of jq.py's own version only when it exists."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from mcp_offload.retrieve.jq_library import cached_libjq, resolve_libjq
from mcp_offload.settings import Settings


def test_auto_uses_the_cached_optimised_build_of_the_installed_version(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    expected = tmp_path / "mcp-offload" / "libjq" / f"jqpy-{importlib.metadata.version('jq')}" / "libjq.so"
    assert cached_libjq(env) == expected
    assert resolve_libjq("auto", env) is None  # not built: jq.py's bundled libjq
    expected.parent.mkdir(parents=True)
    expected.write_bytes(b"\x7fELF")
    assert resolve_libjq("auto", env) == str(expected)


def test_empty_means_bundled_and_a_path_is_taken_as_given(tmp_path: Path) -> None:
    assert resolve_libjq("", {"XDG_CACHE_HOME": str(tmp_path)}) is None
    assert resolve_libjq("/opt/libjq.so") == "/opt/libjq.so"
    assert Settings().jq_library == "auto"
