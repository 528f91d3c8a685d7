"""The native guardrail when its store is down, in the real LiteLLM proxy: fail-open sends the request unmodified
(nothing lost), `fail_closed: true` refuses it with a clear 503 in LiteLLM's error format, never a traceback."""

from __future__ import annotations

import json

import openai
import pytest

from llm_upstream import UpstreamServer
from support import free_port
from support.litellm_proxy import MASTER_KEY, SRC, LiteLLMProxy, StartLiteLLM
from support.litellm_stack import MODEL, OFFLOAD_GUARDRAIL, scripted_models
from support.llm_conversations import BASH_CHAT, build_log, chat_messages

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage


@pytest.fixture(scope="module")
def proxy(start_litellm: StartLiteLLM, litellm_upstream: UpstreamServer) -> LiteLLMProxy:
    dead = f"redis://127.0.0.1:{free_port()}/0"  # a port nothing listens on: the store is down from the start

    def guardrail(name: str, **params: object) -> dict[str, object]:
        return {
            "guardrail_name": name,
            "litellm_params": {
                "guardrail": OFFLOAD_GUARDRAIL,
                "mode": "pre_call",
                "default_on": False,
                "store": dead,
                **params,
            },
        }

    config = {
        "model_list": scripted_models(litellm_upstream),
        "guardrails": [guardrail("offload-open"), guardrail("offload-closed", fail_closed=True)],
    }
    return start_litellm(config, env={"PYTHONPATH": str(SRC)})


def test_store_down_fails_open_or_closed(proxy: LiteLLMProxy, litellm_upstream: UpstreamServer) -> None:
    client = openai.OpenAI(base_url=proxy.base_url + "/v1", api_key=MASTER_KEY, max_retries=0, timeout=120)
    log_text = build_log(needle_at=3)
    litellm_upstream.use(["answered unmodified"])
    start = len(litellm_upstream.requests)
    opened = client.chat.completions.create(
        model=MODEL,
        messages=chat_messages(log_text),
        tools=[BASH_CHAT],
        extra_body={"guardrails": ["offload-open"]},
    )
    assert opened.choices[0].message.content == "answered unmodified"
    (sent,) = [r.json for r in litellm_upstream.requests[start:]]
    assert sent["messages"][3]["content"] == log_text  # fail-open: the original, inline
    assert [t["function"]["name"] for t in sent["tools"]] == ["Bash"]

    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(
            model=MODEL,
            messages=chat_messages(log_text),
            tools=[BASH_CHAT],
            extra_body={"guardrails": ["offload-closed"]},
        )
    assert refused.value.status_code == 503
    body = json.dumps(refused.value.body)
    assert "mcp-offload: the store failed" in body and "Traceback" not in body
    assert len(litellm_upstream.requests) == start + 1  # nothing more went upstream
