"""Each API's `Dialect.answer_text` / `final_answer`: a whole answer read in the API's own shape (what the LiteLLM
guardrail records without knowing any API), and no final answer while a retrieval call is still in it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named

NAMES = frozenset({"search_large_output"})
CALL = {"name": "search_large_output"}

# per API: a whole answer with text and one retrieval call, the same without the call, and the final message
ANSWERS: dict[ApiName, tuple[dict[str, Any], dict[str, Any], Any]] = {
    "openai_chat": (
        {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": "Found it",
                        "tool_calls": [{"id": "c1", "type": "function", "function": {**CALL, "arguments": "{}"}}],
                    }
                }
            ]
        },
        {"choices": [{"message": {"role": "assistant", "content": "Found it", "refusal": None}}]},
        {"role": "assistant", "content": "Found it"},
    ),
    "anthropic": (
        {"content": [{"type": "text", "text": "Found it"}, {"type": "tool_use", "id": "c1", **CALL, "input": {}}]},
        {"content": [{"type": "text", "text": "Found it"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Found it"}]},
    ),
    "responses": (
        {
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it"}]},
                {"type": "function_call", "call_id": "c1", **CALL, "arguments": "{}"},
            ]
        },
        {
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it"}]}
            ]
        },
        [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it"}]}],
    ),
    "gemini": (
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Found it"}, {"functionCall": CALL}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Found it"}]}}]},
        {"role": "model", "parts": [{"text": "Found it"}]},
    ),
    "converse": (
        {"output": {"message": {"content": [{"text": "Found it"}, {"toolUse": {"toolUseId": "c1", **CALL}}]}}},
        {"output": {"message": {"role": "assistant", "content": [{"text": "Found it"}]}}},
        {"role": "assistant", "content": [{"text": "Found it"}]},
    ),
}


@pytest.mark.parametrize("api", list(ANSWERS))
def test_a_whole_answer_read_by_its_own_dialect(api: ApiName) -> None:
    dialect = api_named(api).dialect
    calling, final, said = ANSWERS[api]
    assert dialect.answer_text(calling) == "Found it" == dialect.answer_text(final)
    assert dialect.final_answer(calling, NAMES) is None  # still calls a retrieval tool
    answer = dialect.final_answer(final, NAMES)
    assert answer is not None
    assert answer.client_copy == said
    assert answer.messages == (said if isinstance(said, list) else [said])
    assert dialect.final_answer({}, NAMES) is None and dialect.answer_text({}) == ""
