"""Message formats the compactor reads and writes: one module per API, plus detection (`detect.py`)."""

from mcp_offload.messages.base import Message, MessageFormat, MessageView, Part, ToolCallRef, ToolResult
from mcp_offload.messages.detect import FORMATS, detect_format, get_format

__all__ = [
    "FORMATS",
    "Message",
    "MessageFormat",
    "MessageView",
    "Part",
    "ToolCallRef",
    "ToolResult",
    "detect_format",
    "get_format",
]
