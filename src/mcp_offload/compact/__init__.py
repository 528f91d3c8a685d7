"""Compaction for agent loops: keep a conversation's message list small over the mcp-offload store, losslessly.

`AsyncCompactor` / `Compactor` (compactor.py) compact Anthropic Messages, OpenAI Chat Completions and Responses
lists (formats/), inside a boundary (boundary.py), under a token budget (budget.py), moving older turns into a stored
transcript (transcript.py), and give the model the five retrieval tools in each SDK's format (tool_defs.py).
"""

from mcp_offload.compact.boundary import Boundary
from mcp_offload.compact.budget import Usage
from mcp_offload.compact.compactor import AsyncCompactor, Compactor, CompactReport

__all__ = ["AsyncCompactor", "Boundary", "CompactReport", "Compactor", "Usage"]
