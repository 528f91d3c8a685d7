"""The public library: `mcp_offload.__all__` is the supported API, every name resolves, and importing the package
stays cheap (names load on first use). A change to the list must be deliberate: edit EXPECTED and say why."""

from __future__ import annotations

import importlib
import importlib.resources
import subprocess
import sys

import pytest

import mcp_offload

EXPECTED = {
    # compaction for agent loops
    "AsyncCompactor",
    "Boundary",
    "CompactReport",
    "Compactor",
    "Usage",
    # the in-process retrieval API
    "SessionScope",
    "Services",
    "Settings",
    "build_services",
    "list_outputs",
    "offload",
    "offload_bytes",
    "query",
    "read",
    "search",
    # its results
    "ListOutput",
    "OffloadOutput",
    "OutputInfo",
    "QueryOutput",
    "ReadOutput",
    "SearchOutput",
    # its errors
    "ContextWindowExceeded",
    "ExpiredHandle",
    "InvalidContent",
    "InvalidHandle",
    "NotEnumerable",
    "OffloadError",
    "OperatorError",
    "QueryError",
    "RangeError",
    "SearchError",
    "SettingsError",
    "StoreFull",
    "StoreUnavailable",
    "TooLarge",
    "UnknownHandle",
    "__version__",
}


def test_all_is_the_supported_api() -> None:
    assert set(mcp_offload.__all__) == EXPECTED
    assert len(mcp_offload.__all__) == len(EXPECTED)  # no name listed twice
    assert sorted(dir(mcp_offload)) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED - {"__version__"}))
def test_every_name_is_its_definition(name: str) -> None:
    """Re-exported, not copied or wrapped: the object is the one its defining module holds, under the same name."""
    value = getattr(mcp_offload, name)
    assert value.__module__.startswith("mcp_offload.")
    assert value.__name__ == name
    assert getattr(importlib.import_module(value.__module__), name) is value


def test_errors_share_one_base() -> None:
    errors = [
        "ContextWindowExceeded",
        "ExpiredHandle",
        "InvalidContent",
        "InvalidHandle",
        "QueryError",
        "RangeError",
        "SearchError",
    ]
    errors += ["NotEnumerable", "StoreFull", "StoreUnavailable", "TooLarge", "UnknownHandle"]
    assert all(issubclass(getattr(mcp_offload, name), mcp_offload.OffloadError) for name in errors)
    assert issubclass(mcp_offload.SettingsError, mcp_offload.OperatorError)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = mcp_offload.nope  # __getattr__ raises for any name not exported
    from_import = "from mcp_offload import api"  # internal modules are not part of the surface
    proc = subprocess.run([sys.executable, "-c", from_import], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "cannot import name 'api'" in proc.stderr


def test_import_is_cheap() -> None:
    """`import mcp_offload` loads neither the MCP SDK nor the compactor nor the core: the jq worker and the CLI's
    light subcommands import it."""
    code = (
        "import sys, mcp_offload\n"
        "heavy = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_offload.compact', "
        "'mcp_offload.core', 'pydantic', 'anyio')))\n"
        "print(heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_the_package_is_marked_typed() -> None:
    assert importlib.resources.files("mcp_offload").joinpath("py.typed").is_file()
