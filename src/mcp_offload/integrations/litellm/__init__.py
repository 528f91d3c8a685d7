"""mcp-offload inside the LiteLLM proxy: a guardrail that rewrites each request through the gateway's cache-safe core
and answers the model's retrieval calls in LiteLLM's own agentic loop.

    pip install 'mcp-offload[litellm]'          # into LiteLLM's environment

    guardrails:                                 # LiteLLM's config.yaml
      - guardrail_name: mcp-offload
        litellm_params:
          guardrail: mcp_offload.integrations.litellm.OffloadGuardrail
          mode: pre_call
          default_on: true
          store: redis://127.0.0.1:6379/0       # optional: default MCP_OFFLOAD_STORE / the per-user directory
          threshold_tokens: 1000                # optional: tool results at/over this are stored

Per request (`/v1/chat/completions`, `/v1/messages`, `/v1/responses`, in their own formats): `rewrite_request` as in
`mcp-offload gateway` (sticky decisions, deterministic handles, tail-only, the cost rule, byte-stable tools), which
replaces large new tool results with mcp-offload's reference + preview and adds the read/search/jq tools
(`read_large_output`, `search_large_output`, `query_large_output`) from the session's first offload on. When the
model calls them, LiteLLM's agentic-loop hooks (`async_should_run_agentic_loop` / `async_build_agentic_loop_plan`)
run the calls against the store (`run_retrieval`: the MCP tools' own text, errors as answers) and ask the model
again; in a turn that also calls the client's own tools only the retrieval calls are echoed and answered, and the
model re-plans the others with what they found (the client never receives a call to a tool it does not have).
Streaming requests that carry the tools are run unstreamed by LiteLLM and streamed back (its converted-stream path:
an SSE stream of the whole answer, for Anthropic Messages under the flag LiteLLM's replay reads there), so the loop
covers them too; the client sees the final answer arrive at once, not token by token.

Cache safety after a loop: the client receives only the final answer, so its next request would lack the retrieval
calls and results the upstream saw and miss the provider's prompt cache from there on. When the loop is over
(`async_post_agentic_loop_response_hook`, depth 0) the guardrail records an expansion as `mcp-offload gateway` does
(`record_expansion`: the rounds' messages and the final answer in request form, keyed by the client's copy of that
answer and the message it answered), and the next request's rewrite puts those exact messages back. This holds for
the three APIs, streamed or not (a streamed request's loop runs unstreamed, so the final answer is whole). Not
recorded (the next turn then sends the client's copy: a cache miss, nothing lost): a loop LiteLLM ran in another
API than the client's (`/v1/messages` in front of an OpenAI deployment: LiteLLM bridges it to Responses), a final
answer that still calls a retrieval tool (LiteLLM's `max_agentic_loops` ended the loop), and a store that fails.

Sessions are the gateway's (`x-mcp-offload-session`, else the credential + the conversation's opening). A store that
fails leaves the request as it was (fail-open, logged); `fail_closed: true` refuses it instead.

Tested with the LiteLLM version pinned in .ci/litellm-deps.sh; the hooks change often, hence the upper bound of the
`litellm` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_offload.integrations.litellm.guardrail import OffloadGuardrail

__all__ = ["OffloadGuardrail"]


def __getattr__(name: str) -> Any:
    """`OffloadGuardrail` is imported on first use (LiteLLM's loader: import the module, then getattr), so the pure
    parts (exchange.py, calls.py) import without LiteLLM installed."""
    if name == "OffloadGuardrail":
        from mcp_offload.integrations.litellm.guardrail import OffloadGuardrail

        return OffloadGuardrail
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
