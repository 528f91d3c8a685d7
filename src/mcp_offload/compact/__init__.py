"""Compaction for agent loops: keep a conversation's message list small over the mcp-offload store, losslessly.

`AsyncCompactor` (compactor.py; its blocking twin `Compactor`: sync.py) compacts Anthropic Messages, OpenAI Chat
Completions and Responses lists (each API's format: `mcp_offload.apis`), inside a boundary (boundary.py), under a
token budget (budget.py), one call's state in request.py, image parts through the decision record (images.py),
moving older turns into a stored transcript (transcript.py) whose note is recorded (transcript_record.py), and gives
the model the five retrieval tools in each SDK's format (`cachesafe/tool_defs.py`).
"""

from mcp_offload.compact.boundary import Boundary
from mcp_offload.compact.budget import Usage
from mcp_offload.compact.compactor import AsyncCompactor
from mcp_offload.compact.request import CompactReport
from mcp_offload.compact.sync import Compactor

__all__ = ["AsyncCompactor", "Boundary", "CompactReport", "Compactor", "Usage"]
