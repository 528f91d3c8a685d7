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
Streaming requests that carry the tools are run unstreamed by LiteLLM and streamed back (its converted-stream path),
so the loop covers them too.

Sessions are the gateway's (`x-mcp-offload-session`, else the credential + the conversation's opening). A store that
fails leaves the request as it was (fail-open, logged); `fail_closed: true` refuses it instead.

Tested with the LiteLLM version pinned in .ci/litellm-deps.sh; the hooks change often, hence the upper bound of the
`litellm` extra.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.litellm_core_utils.prompt_templates.factory import get_tool_calls_from_response
from litellm.types.integrations.custom_logger import (
    HEADROOM_INTERCEPTION_PREFIX,
    AgenticLoopPlan,
    AgenticLoopRequestPatch,
    as_converted_stream,
)

from mcp_offload.cachesafe.rewrite import RewritePolicy
from mcp_offload.cachesafe.session import GatewaySession
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES, ApiKind
from mcp_offload.core.services import Services, build_services
from mcp_offload.gateway.retrieval import run_retrieval
from mcp_offload.gateway.rewrite import RewriteUnavailable, rewrite_request
from mcp_offload.settings import Settings

__all__ = ["OffloadGuardrail"]

log = logging.getLogger("mcp_offload.integrations.litellm")

_API_OF_CALL_TYPE: dict[str, ApiKind] = {
    "completion": "openai_chat",
    "acompletion": "openai_chat",
    "anthropic_messages": "anthropic",
    "responses": "responses",
    "aresponses": "responses",
}
_SESSION_TTL_S = 15 * 60.0
_MAX_SESSIONS = 10_000


class OffloadGuardrail(CustomGuardrail):  # type: ignore[misc]  # LiteLLM is untyped for mypy here
    """The guardrail LiteLLM builds from config.yaml (`guardrail: mcp_offload.integrations.litellm.OffloadGuardrail`);
    every other `litellm_params` field arrives as a keyword and the ones not listed here are ignored."""

    server_fulfilled_tool_names = RETRIEVAL_TOOL_NAMES

    def __init__(
        self,
        *,
        store: str | None = None,
        threshold_tokens: int | None = None,
        fail_closed: bool = False,
        services: Services | None = None,
        **kwargs: Any,
    ) -> None:
        base = {k: kwargs[k] for k in ("guardrail_name", "event_hook", "default_on") if k in kwargs}
        super().__init__(**base)
        self.store = store
        self.policy = RewritePolicy(
            threshold_tokens=int(threshold_tokens) if threshold_tokens else RewritePolicy().threshold_tokens,
            fail_closed=bool(fail_closed),
        )
        self._services = services
        self._sessions: OrderedDict[str, tuple[str, ApiKind, float]] = OrderedDict()  # call id -> session

    # -- the request -------------------------------------------------------------------------------------------
    def services(self) -> Services:
        if self._services is None:
            self._services = build_services(Settings.from_env().with_overrides(store=self.store))
        return self._services

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any] | None:
        api = _API_OF_CALL_TYPE.get(str(getattr(call_type, "value", call_type)))
        if api is None or not self.should_run_guardrail(data, _pre_call()):
            return data
        headers = _headers(data)
        try:
            rewrite = await rewrite_request(self.services(), api, data, headers, self.policy)
        except RewriteUnavailable as exc:
            from fastapi import HTTPException

            raise HTTPException(status_code=503, detail={"error": f"mcp-offload: {exc.reason}"}) from None
        if rewrite.fail_open:
            log.warning("mcp-offload: %s; the request goes out unmodified", rewrite.fail_open)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str) and call_id:
            self._remember(call_id, rewrite.session.key, api)
        if not rewrite.changed:
            return data
        data.update(rewrite.body)
        return data

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """A streaming request that carries the retrieval tools is run unstreamed (and streamed back by LiteLLM), so
        the agentic loop can answer the tool calls before the client sees anything."""
        result = await super().async_pre_call_deployment_hook(kwargs, call_type)
        effective = kwargs if result is None else result
        if not effective.get("stream") or not _has_retrieval_tools(effective.get("tools")):
            return result  # type: ignore[no-any-return]
        return as_converted_stream(effective, HEADROOM_INTERCEPTION_PREFIX)  # type: ignore[no-any-return]

    # -- the agentic loop ------------------------------------------------------------------------------------
    async def async_should_run_agentic_loop(
        self,
        response: Any,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        stream: bool,
        custom_llm_provider: str,
        kwargs: dict[str, Any],
    ) -> tuple[bool, dict[str, Any]]:
        if not _has_retrieval_tools(tools):
            return False, {}
        calls = [dict(c) for c in get_tool_calls_from_response(response)]
        ours = [c for c in calls if c.get("name") in RETRIEVAL_TOOL_NAMES]
        if not ours:
            return False, {}
        # A turn that also calls the client's own tools: only the retrieval calls are echoed and answered, and the
        # model, asked again with what they found, re-plans the others (the client never gets a call to a tool it
        # does not have)
        return True, {"tool_calls": ours}

    async def async_build_agentic_loop_plan(
        self,
        tools: dict[str, Any],
        model: str,
        messages: list[dict[str, Any]],
        response: Any,
        anthropic_messages_provider_config: Any,
        anthropic_messages_optional_request_params: dict[str, Any],
        logging_obj: Any,
        stream: bool,
        kwargs: dict[str, Any],
    ) -> Any:
        calls: list[dict[str, Any]] = list(tools.get("tool_calls", []))
        call_id = getattr(logging_obj, "litellm_call_id", None) or kwargs.get("litellm_call_id")
        known = self._sessions.get(str(call_id)) if call_id else None
        answers: list[tuple[dict[str, Any], str]] = []
        for call in calls:
            if known is None:
                text = "This request's mcp-offload session is not known here; nothing was retrieved."
            else:
                answer = await run_retrieval(
                    self.services(), GatewaySession.of_key(known[0]), str(call.get("name")), call.get("arguments")
                )
                text = answer.text
            answers.append((call, text))
        text_out = _response_text(response)
        if isinstance(_get(response, "output"), list):
            follow_up = list(messages) + _responses_items(text_out, answers)
        elif isinstance(_get(response, "content"), list):
            follow_up = list(messages) + _anthropic_messages(text_out, answers)
        else:
            follow_up = list(messages) + _chat_messages(text_out, answers)
        max_tokens = anthropic_messages_optional_request_params.get("max_tokens") or kwargs.get("max_tokens")
        optional = {k: v for k, v in anthropic_messages_optional_request_params.items() if k != "max_tokens"}
        full_model = model
        if logging_obj is not None:
            params = getattr(logging_obj, "model_call_details", {}).get("agentic_loop_params", {})
            candidate = params.get("model", model) if isinstance(params, dict) else model
            full_model = candidate if isinstance(candidate, str) and candidate else model
        return AgenticLoopPlan(
            run_agentic_loop=True,
            request_patch=AgenticLoopRequestPatch(
                model=full_model,
                messages=follow_up,
                max_tokens=max_tokens,
                optional_params=optional,
                kwargs={k: v for k, v in kwargs.items() if k != "litellm_logging_obj"},
            ),
            metadata={"tool_type": "mcp_offload_retrieval"},
        )

    # -- internals -------------------------------------------------------------------------------------------
    def _remember(self, call_id: str, session_key: str, api: ApiKind) -> None:
        now = time.monotonic()
        self._sessions[call_id] = (session_key, api, now)
        while self._sessions:
            oldest, (_, _, at) = next(iter(self._sessions.items()))
            if len(self._sessions) <= _MAX_SESSIONS and now - at < _SESSION_TTL_S:
                break
            self._sessions.pop(oldest)


def _pre_call() -> Any:
    from litellm.types.guardrails import GuardrailEventHooks

    return GuardrailEventHooks.pre_call


def _headers(data: Mapping[str, Any]) -> dict[str, str]:
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, dict) else None
    return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _has_retrieval_tools(tools: Any) -> bool:
    return isinstance(tools, list) and any(_tool_name(t) in RETRIEVAL_TOOL_NAMES for t in tools)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _response_text(response: Any) -> str:
    """The text the model wrote beside its tool calls (any of the three response shapes)."""
    choices = _get(response, "choices")
    if isinstance(choices, list) and choices:
        message = _get(choices[0], "message")
        content = _get(message, "content")
        return content if isinstance(content, str) else ""
    pieces: list[str] = []
    for block in _get(response, "content") or []:
        if _get(block, "type") == "text":
            pieces.append(str(_get(block, "text") or ""))
    for item in _get(response, "output") or []:
        if _get(item, "type") == "message":
            for part in _get(item, "content") or []:
                if _get(part, "type") == "output_text":
                    pieces.append(str(_get(part, "text") or ""))
    return "".join(pieces)


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})


def _arguments_object(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return {}
    return arguments if arguments is not None else {}


def _chat_messages(text: str, answers: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    assistant = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.get("id"),
                "type": "function",
                "function": {"name": call.get("name"), "arguments": _arguments_text(call.get("arguments"))},
            }
            for call, _ in answers
        ],
    }
    return [assistant, *({"role": "tool", "tool_call_id": call.get("id"), "content": out} for call, out in answers)]


def _anthropic_messages(text: str, answers: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {
            "type": "tool_use",
            "id": call.get("id"),
            "name": call.get("name"),
            "input": _arguments_object(call.get("arguments")),
        }
        for call, _ in answers
    ]
    results = [{"type": "tool_result", "tool_use_id": call.get("id"), "content": out} for call, out in answers]
    return [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]


def _responses_items(text: str, answers: list[tuple[dict[str, Any], str]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "assistant", "content": text}] if text else []
    for call, out in answers:
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": call.get("name"),
                "arguments": _arguments_text(call.get("arguments")),
            }
        )
        items.append({"type": "function_call_output", "call_id": call.get("id"), "output": out})
    return items
