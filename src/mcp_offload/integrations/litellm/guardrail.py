"""`OffloadGuardrail`: LiteLLM's hooks, each doing one step of what the package docstring describes.

- `async_pre_call_hook`: the request through `rewrite_request` (which also restores earlier loops' expansions);
  remembers the call (session, API, the client's last message) for the hooks below.
- `async_pre_call_deployment_hook`: a streamed request that carries the retrieval tools is run unstreamed.
- `async_should_run_agentic_loop` / `async_build_agentic_loop_plan`: one round of the retrieval loop (LiteLLM calls
  them again, one depth deeper, on each follow-up's response).
- `async_post_agentic_loop_response_hook`: at depth 0, with the loop's final response, records the expansion.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.litellm_core_utils.prompt_templates.factory import get_tool_calls_from_response
from litellm.types.integrations.custom_logger import (
    HEADROOM_INTERCEPTION_PREFIX,
    WEBSEARCH_INTERCEPTION_PREFIX,
    AgenticLoopPlan,
    AgenticLoopRequestPatch,
    as_converted_stream,
)

from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import record_expansion
from mcp_offload.cachesafe.request_rewrite import RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.retrieval import run_retrieval
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES
from mcp_offload.core.services import Services, build_services
from mcp_offload.integrations.litellm.calls import CallTable, LoopCall
from mcp_offload.integrations.litellm.exchange import (
    api_of_call_type,
    final_answer,
    response_api,
    response_text,
    round_messages,
)
from mcp_offload.settings import Settings

__all__ = ["OffloadGuardrail"]

log = logging.getLogger("mcp_offload.integrations.litellm")

_UNKNOWN_SESSION = "This request's mcp-offload session is not known here; nothing was retrieved."


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
        self._calls = CallTable()

    # -- the request -------------------------------------------------------------------------------------------
    def services(self) -> Services:
        if self._services is None:
            self._services = build_services(Settings.from_env().with_overrides(store=self.store))
        return self._services

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any] | None:
        api = api_of_call_type(call_type)
        if api is None or not self.should_run_guardrail(data, _pre_call()):
            return data
        sent = api.history.messages(data)
        previous = sent[-1] if sent else None  # taken before the rewrite: the expansion is keyed by the client's copy
        try:
            rewrite = await rewrite_request(self.services(), api, data, _headers(data), self.policy)
        except RewriteUnavailable as exc:
            from fastapi import HTTPException

            raise HTTPException(status_code=503, detail={"error": f"mcp-offload: {exc.reason}"}) from None
        if rewrite.fail_open:
            log.warning("mcp-offload: %s; the request goes out unmodified", rewrite.fail_open)
        call_id = data.get("litellm_call_id")
        if isinstance(call_id, str) and call_id:
            self._calls.remember(call_id, LoopCall(rewrite.session.key, api, previous))
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
        # Anthropic Messages: LiteLLM streams a converted answer back only under the web-search interception's flag
        # (its `_maybe_wrap_in_fake_stream`); the other surfaces honour any interception prefix
        api = api_of_call_type(call_type)
        anthropic = api is not None and "anthropic_messages" in api.litellm_call_types  # LiteLLM's Messages surface
        prefix = WEBSEARCH_INTERCEPTION_PREFIX if anthropic else HEADROOM_INTERCEPTION_PREFIX
        return as_converted_stream(effective, prefix)  # type: ignore[no-any-return]

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
        call_id = _call_id(logging_obj, kwargs)
        known = self._calls.get(call_id)
        answered: list[tuple[dict[str, Any], str]] = []
        for call in calls:
            if known is None:
                answered.append((call, _UNKNOWN_SESSION))
                continue
            answer = await run_retrieval(
                self.services(),
                CacheSafeSession.of_key(known.session_key),
                str(call.get("name")),
                call.get("arguments"),
            )
            answered.append((call, answer.text))
        api = response_api(response)
        added = round_messages(api, response_text(response), answered)
        if known is not None:
            known.add_round(_depth(kwargs), api, added)
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
                messages=[*messages, *added],
                max_tokens=max_tokens,
                optional_params=optional,
                kwargs={k: v for k, v in kwargs.items() if k != "litellm_logging_obj"},
            ),
            metadata={"tool_type": "mcp_offload_retrieval"},
        )

    async def async_post_agentic_loop_response_hook(self, response: Any, plan: Any, kwargs: dict[str, Any]) -> Any:
        """After the whole loop (depth 0: the follow-ups below have returned), record what the upstream saw for the
        answer the client receives, so the client's next turn is restored to it (cache-safe). The response is
        returned as it is."""
        if _depth(kwargs) == 0:
            call_id = _call_id(None, kwargs)
            call = self._calls.get(call_id)
            self._calls.forget(call_id)
            if call is not None:
                await self._record(call, response)
        return response

    # -- internals -------------------------------------------------------------------------------------------
    async def _record(self, call: LoopCall, response: Any) -> None:
        if not call.complete or not call.rounds:
            log.info("mcp-offload: the loop's rounds were not all seen here; no expansion recorded")
            return
        if call.rounds_api != call.api:  # LiteLLM translated the client's API: its copy is not in the loop's shape
            log.info(
                "mcp-offload: a loop in %s for a %s client; no expansion recorded",
                call.rounds_api.name if call.rounds_api else None,
                call.api.name,
            )
            return
        final = final_answer(call.api, response)
        if final is None:
            log.info("mcp-offload: the loop's last response is not one the client sends back; no expansion recorded")
            return
        try:
            await record_expansion(
                self.services(),
                CacheSafeSession.of_key(call.session_key),
                call.api,
                final.client_copy,
                [*call.loop_messages(), *final.messages],
                previous_message=call.previous,
            )
        except Exception as exc:  # the client has its answer; a missing expansion costs cache hits, nothing else
            log.warning(
                "mcp-offload: could not record the retrieval expansion (%s: %s); later turns send the client's copy",
                type(exc).__name__,
                exc,
            )


def _pre_call() -> Any:
    from litellm.types.guardrails import GuardrailEventHooks

    return GuardrailEventHooks.pre_call


def _headers(data: Mapping[str, Any]) -> dict[str, str]:
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, dict) else None
    return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}


def _call_id(logging_obj: Any, kwargs: Mapping[str, Any]) -> str | None:
    found = getattr(logging_obj, "litellm_call_id", None) or kwargs.get("litellm_call_id")
    return str(found) if found else None


def _depth(kwargs: Mapping[str, Any]) -> int:
    """The agentic loop's depth of the call these kwargs belong to (0: the client's own request)."""
    try:
        return int(kwargs.get("_agentic_loop_depth") or 0)
    except (TypeError, ValueError):
        return 0


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _has_retrieval_tools(tools: Any) -> bool:
    return isinstance(tools, list) and any(_tool_name(t) in RETRIEVAL_TOOL_NAMES for t in tools)
