"""The cache-safe history core the gateway and the `Compactor` share.

An LLM API request's history is rewritten here: large new tool results become references, every decision is taken
once and recorded (so every later turn, restart and instance sends the same bytes), and the already-sent prefix is
rewritten only when it pays at the provider's cache prices or under window pressure.

- `rewrite.py`: the rules (`rewrite_messages`) under a caller's `policy.py` (`RewritePolicy`, `ClearToolUses`);
- `request_rewrite.py`: the rules over a whole request body, plus the retrieval tools (`rewrite_request`: the gateway
  and the LiteLLM guardrail);
- `retrieval.py`: running a model's retrieval call for a session (`run_retrieval`), reaching a handle of another
  conversation of the same credential (`handle_reach.py`);
- `record/`: the decision record (filesystem or Redis, beside the store);
- `cost.py`: the providers' cache prices and the cost rule;
- `session.py`: which conversation a request belongs to (its store scope);
- `tool_defs.py`, `tool_text.py`: the retrieval tools in each API's format, as fixed bytes.

Each API's message format and request body (reading and editing one message, where the messages and tools sit) are
its package under `mcp_offload.apis`.
"""
