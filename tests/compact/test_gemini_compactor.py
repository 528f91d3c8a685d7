"""The `Compactor` on Gemini `contents` (`format="gemini"`, or recognised), with the google-genai SDK's own types in
and out: a large `functionResponse` becomes a reference the model can read back, the list stays valid
`types.Content`, and the report names the format."""

from __future__ import annotations

from pathlib import Path

from google.genai import types

from mcp_offload import Compactor
from support.compact import big_json, handle_in


def gemini_turn(call_id: str, result: str) -> list[types.Content]:
    call = types.FunctionCall(id=call_id, name="fetch", args={"url": "https://example.com/orders"})
    answer = types.FunctionResponse(id=call_id, name="fetch", response={"output": result})
    return [
        types.Content(role="user", parts=[types.Part(text="Which orders are held?")]),
        types.Content(role="model", parts=[types.Part(function_call=call)]),
        types.Content(role="user", parts=[types.Part(function_response=answer)]),
    ]


def test_a_large_function_response_becomes_a_reference_in_sdk_contents(tmp_path: Path) -> None:
    result = big_json(2000)
    contents = gemini_turn("c1", result)
    with Compactor(store=str(tmp_path / "store"), session="gemini", jq_workers=1) as c:
        out = c.compact(contents, format="gemini")
        assert c.last_report is not None and c.last_report.format == "gemini"
        read = [types.Content.model_validate(m) for m in out]  # still the SDK's own type
        answer = read[2].parts[0].function_response  # type: ignore[index]
        assert answer is not None and answer.id == "c1" and answer.name == "fetch"
        reference = answer.response["output"]  # type: ignore[index]
        assert reference.startswith("Stored as out_") and len(reference) < len(result) // 10
        assert read[:2] == contents[:2]  # the question and the call are untouched
        found = c.run_tool("search_large_output", {"handle": handle_in(reference), "pattern": "row 1999 of x"})
        assert "row 1999 of x" in found  # the whole result is stored, down to its last row
        assert c.compact(contents) == out  # recognised without format=, and the same bytes again
        assert c.last_report.format == "gemini"
        assert c.usage(out, format="gemini", retrieval_tools=False).tokens < 1000
