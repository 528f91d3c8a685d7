"""Platforms: on Linux and macOS every flag the filesystem store needs exists; where `O_DIRECTORY`, `O_NOFOLLOW`
or `fcntl` are missing (Windows) the package must still import, the filesystem store must refuse with a one-line
reason, and the unit tests that need no filesystem store must pass. Simulated here by the
`support.without_posix_flags` plugin, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_offload.os_support import missing_for_fs_store

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}

IMPORT_ALL = """
import importlib, pkgutil, sys
import support.without_posix_flags  # the flags are gone before mcp_offload is imported
import mcp_offload
skipped = (
    "mcp_offload.retrieve.jq_worker.",  # the jq worker runs in its own process, on POSIX
    "mcp_offload.integrations.litellm",  # runs inside a LiteLLM proxy: needs the `litellm` extra (its own venv in CI)
)
for info in pkgutil.walk_packages(mcp_offload.__path__, "mcp_offload."):
    if not info.name.startswith(skipped):
        importlib.import_module(info.name)
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.errors import StoreUnavailable
try:
    FilesystemStore(sys.argv[1])
except StoreUnavailable as exc:
    print(exc)
"""

NEEDS_A_STORE = {
    "test_lookup_examples.py",  # runs the examples through the query tool: a store
    "test_by_kind.py",  # runs every preview's calls through the API: a store
    "test_table_sql.py",  # runs the table preview's SQL through the API: a store
}
PREVIEW = sorted(f"tests/preview/{p.name}" for p in (ROOT / "tests" / "preview").glob("test_*.py"))
PREVIEW = [path for path in PREVIEW if path.rsplit("/", 1)[1] not in NEEDS_A_STORE]
CORE = [
    "tests/test_units.py",
    "tests/test_settings.py",
    "tests/test_unicode.py",
    "tests/test_logs.py",
    "tests/retrieve/test_pattern_shape.py",
    "tests/serve/test_stdio_rejects.py::test_the_id_is_recovered_wherever_it_sits",
]
# In two runs of their own, so that parallel workers share them: 15-25 s of CPU each, of which a pytest start (the
# conftest's imports) is a few seconds
UNIT_TESTS = {"core-and-preview-0": [*CORE, *PREVIEW[0::2]], "preview-1": PREVIEW[1::2]}


def test_this_platform_has_what_the_filesystem_store_needs() -> None:
    assert missing_for_fs_store() == []  # CI runs on Linux; the same holds on macOS


def test_everything_imports_without_the_flags_and_the_fs_store_says_why(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == (
        "the filesystem store needs O_NOFOLLOW, O_DIRECTORY, which this platform lacks (supported: "
        "Linux, macOS); use a Redis store instead: --store redis://host:port/db"
    )
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("tests", UNIT_TESTS.values(), ids=UNIT_TESTS.keys())
def test_unit_tests_pass_with_the_flags_simulated(tests: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "support.without_posix_flags", "-q", "-p", "no:cacheprovider",
         *tests],
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
        cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
