"""bench/gateway.py's scripted session: the agent's tools and system prompt, and the upstream's script (the next tool
call of the session, now and then a search through the gateway's retrieval tool)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from bench.gateway_outputs import Scenario, fact
from llm_upstream import Turn, reply, tool_call

SEARCH = "search_large_output"


SYSTEM_PROMPT = "\n".join(
    f"Rule {i}: act carefully, verify each tool result, keep the user informed, prefer small safe steps."
    for i in range(180)
)


class ToolSpec(TypedDict):
    """A tool the agent is offered, rendered per API in Session.body."""

    name: str
    description: str
    schema: dict[str, Any]


BASH: ToolSpec = {
    "name": "bash",
    "description": "Run a shell command and return its output.",
    "schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


OTHER_TOOLS: list[ToolSpec] = [
    {
        "name": name,
        "description": f"The {name} tool: " + "it does what its name says. " * 12,
        "schema": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}},
    }
    for name in ("read_file", "write_file", "list_dir", "grep")
]


TOOLS = [BASH, *OTHER_TOOLS]


def bench_script(plans: dict[str, Scenario]) -> Callable[[Turn], Any]:
    def decide(turn: Turn) -> Any:
        name = turn.user_texts()[0].removeprefix("Session: ").split("\n", 1)[0] if turn.user_texts() else ""
        scenario = plans[name]
        exchanges = turn.exchanges()
        step = sum(1 for e in exchanges if e.name == "bash" and e.result is not None)
        if step >= len(scenario.steps):
            return reply("All steps done.")
        last = exchanges[-1].name if exchanges else None
        # ids that depend on the conversation only, so every mode's prompt holds the same bytes
        call_id = f"{'toolu' if turn.api == 'anthropic' else 'call'}_bench_{len(exchanges):04d}"
        if step in scenario.retrieve_at and last == "bash" and SEARCH in turn.tool_names:
            search = tool_call(SEARCH, {"pattern": fact(step - 1), "literal": True}, id=call_id)
            return reply("Checking an earlier output.", search)
        said = f"Running step {step}."
        if last == SEARCH:  # say whether the gateway's answer held the fact (the bench counts it in the history)
            said += " Retrieved ok." if fact(step - 1) in (exchanges[-1].result or "") else " Retrieved MISSING."
        return reply(said, tool_call("bash", {"command": f"run step {step}"}, id=call_id))

    return decide
