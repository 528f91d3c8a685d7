"""OpenAI Responses requests: `instructions`, `input` (a string, or items: messages, function / custom tool calls
and their outputs, reasoning, built-in tool calls), `tools` (`{"type": "function", "name", …}`, built-in tools).

Tool results are `function_call_output` / `custom_tool_call_output` items (read and replaced by
`messages.py`); reasoning items (encrypted content included), compaction items and built-in tool call
items keep their identity. A string `input` has no tool results: such a request is forwarded as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.history import History, normalized
from mcp_offload.apis.message import Message
from mcp_offload.apis.responses.messages import ResponsesFormat

RESULT_TYPES = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "computer_call_output",
        "local_shell_call_output",
        "mcp_approval_response",
    }
)
OUTPUT_TYPES = frozenset({"reasoning", "compaction", "mcp_list_tools", "mcp_approval_request"})
# Keys an SDK may add or drop when it sends an output item back as input: not content.
VOLATILE_KEYS = frozenset({"id", "status"})


class ResponsesHistory(History):
    api = "responses"
    format = ResponsesFormat()
    messages_key = "input"
    outputs_run_together = True
    tool_results_follow_as_messages = True

    def opening(self, body: Mapping[str, Any]) -> Any:
        instructions = body.get("instructions")
        if body.get("previous_response_id") is not None:
            return {"instructions": instructions, "continues": True}
        items = body.get("input")
        if isinstance(items, str):
            return {"instructions": instructions, "input": [{"role": "user", "content": items}]}
        opening: list[Any] = []
        if isinstance(items, list):
            for item in items:
                opening.append(self.normalize_message(item) if isinstance(item, dict) else item)
                if isinstance(item, dict) and item.get("role") == "user":
                    break
        return {"instructions": instructions, "input": normalized(opening)}

    def is_model_output(self, message: Message) -> bool:
        kind = message.get("type")
        if kind in (None, "message"):
            return message.get("role") == "assistant"
        return isinstance(kind, str) and (kind in OUTPUT_TYPES or kind.endswith("_call"))

    def normalize_message(self, message: Message) -> Any:
        """`type: "message"` is the default; ids and statuses are dropped; a string content equals one text part;
        empty `annotations` / `logprobs` / `summary`-less fields equal absent ones."""
        out = {k: v for k, v in message.items() if k not in VOLATILE_KEYS}
        if out.get("role") is not None and out.get("type") is None:
            out["type"] = "message"
        content = out.get("content")
        if isinstance(content, str) and out.get("type") == "message":
            part = "output_text" if out.get("role") == "assistant" else "input_text"
            out["content"] = [{"type": part, "text": content}]
        elif isinstance(content, list):
            out["content"] = [
                {k: v for k, v in p.items() if not (k in ("annotations", "logprobs") and v == [])}
                if isinstance(p, dict)
                else p
                for p in content
            ]
        return normalized(out)

    def is_result_message(self, message: Message) -> bool:
        return message.get("type") in RESULT_TYPES
