"""mcp-offload: keep large tool outputs out of the context window, losslessly.

The supported library API, importable from here (everything else is internal and may move):

- compaction for agent loops: `Compactor`, `AsyncCompactor`, `CompactReport`, `Usage`, `Boundary`
- the in-process retrieval API: `offload`, `offload_bytes`, `read`, `search`, `query`, `list_outputs` over
  `Services` (`build_services(Settings(...))`) and a `SessionScope` (whose outputs a call sees)
- the result models those return: `OffloadOutput`, `ReadOutput`, `SearchOutput`, `QueryOutput`, `ListOutput`,
  `OutputInfo`
- the errors: `OffloadError` and its subclasses (for the model, with stable codes; `ContextWindowExceeded` when
  a compaction cannot fit the window) and `OperatorError` (settings);
  `mcp_offload.errors` draws the tree

Names load on first use, so `import mcp_offload` stays cheap for the server and the jq worker processes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcp_offload.version import __version__

# name -> the module that defines it (loaded on first access)
_EXPORTS: dict[str, str] = {
    "AsyncCompactor": "mcp_offload.compact",
    "Boundary": "mcp_offload.compact",
    "CompactReport": "mcp_offload.compact",
    "Compactor": "mcp_offload.compact",
    "Usage": "mcp_offload.compact",
    "SessionScope": "mcp_offload.core.outputs",
    "offload": "mcp_offload.core.outputs",
    "offload_bytes": "mcp_offload.core.outputs",
    "read": "mcp_offload.core.outputs",
    "search": "mcp_offload.core.outputs",
    "query": "mcp_offload.core.outputs",
    "list_outputs": "mcp_offload.core.outputs",
    "Services": "mcp_offload.core.services",
    "build_services": "mcp_offload.core.services",
    "Settings": "mcp_offload.settings",
    "OffloadOutput": "mcp_offload.core.results",
    "ReadOutput": "mcp_offload.core.results",
    "SearchOutput": "mcp_offload.core.results",
    "QueryOutput": "mcp_offload.core.results",
    "ListOutput": "mcp_offload.core.results",
    "OutputInfo": "mcp_offload.core.results",
    "OffloadError": "mcp_offload.errors",
    "ContextWindowExceeded": "mcp_offload.errors",
    "InvalidHandle": "mcp_offload.errors",
    "UnknownHandle": "mcp_offload.errors",
    "ExpiredHandle": "mcp_offload.errors",
    "RangeError": "mcp_offload.errors",
    "SearchError": "mcp_offload.errors",
    "QueryError": "mcp_offload.errors",
    "InvalidContent": "mcp_offload.errors",
    "TooLarge": "mcp_offload.errors",
    "NotEnumerable": "mcp_offload.errors",
    "OperatorError": "mcp_offload.errors",
    "StoreFull": "mcp_offload.errors",
    "StoreUnavailable": "mcp_offload.errors",
    "SettingsError": "mcp_offload.errors",
}

__all__ = [
    "AsyncCompactor",
    "Boundary",
    "CompactReport",
    "Compactor",
    "ContextWindowExceeded",
    "ExpiredHandle",
    "InvalidContent",
    "InvalidHandle",
    "ListOutput",
    "NotEnumerable",
    "OffloadError",
    "OffloadOutput",
    "OperatorError",
    "OutputInfo",
    "QueryError",
    "QueryOutput",
    "RangeError",
    "ReadOutput",
    "SearchError",
    "SearchOutput",
    "Services",
    "SessionScope",
    "Settings",
    "SettingsError",
    "StoreFull",
    "StoreUnavailable",
    "TooLarge",
    "UnknownHandle",
    "Usage",
    "__version__",
    "build_services",
    "list_outputs",
    "offload",
    "offload_bytes",
    "query",
    "read",
    "search",
]

if TYPE_CHECKING:
    from mcp_offload.compact import AsyncCompactor, Boundary, Compactor, CompactReport, Usage
    from mcp_offload.core.outputs import SessionScope, list_outputs, offload, offload_bytes, query, read, search
    from mcp_offload.core.results import (
        ListOutput,
        OffloadOutput,
        OutputInfo,
        QueryOutput,
        ReadOutput,
        SearchOutput,
    )
    from mcp_offload.core.services import Services, build_services
    from mcp_offload.errors import (
        ContextWindowExceeded,
        ExpiredHandle,
        InvalidContent,
        InvalidHandle,
        NotEnumerable,
        OffloadError,
        OperatorError,
        QueryError,
        RangeError,
        SearchError,
        SettingsError,
        StoreFull,
        StoreUnavailable,
        TooLarge,
        UnknownHandle,
    )
    from mcp_offload.settings import Settings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_offload' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__
