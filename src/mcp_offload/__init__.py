"""mcp-offload: keep large tool outputs out of the context window, losslessly.

`Compactor` / `AsyncCompactor` (the compaction API for agent loops, `mcp_offload.compact`) are loaded on first use,
so `import mcp_offload` stays cheap for the server and the jq worker processes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_offload.version import __version__

__all__ = ["AsyncCompactor", "Compactor", "__version__"]

if TYPE_CHECKING:
    from mcp_offload.compact import AsyncCompactor, Compactor


def __getattr__(name: str) -> Any:
    if name in ("Compactor", "AsyncCompactor"):
        from mcp_offload import compact

        return getattr(compact, name)
    raise AttributeError(f"module 'mcp_offload' has no attribute {name!r}")
