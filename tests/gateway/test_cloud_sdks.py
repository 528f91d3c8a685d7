"""The clouds through the `mcp-offload gateway` process, each with its real SDK (tests/support/cloud_flows.py: boto3
`converse`, `converse_stream`, `invoke_model_with_response_stream`, `AnthropicBedrock`, `AnthropicVertex`,
`google-genai` with `vertexai=True`, `AzureOpenAI` chat and responses) against the scripted clouds
(tests/llm_upstream: SigV4 checked against the test credentials, event-stream frames, Vertex resource paths, Azure's
api-version):

- a big tool result is offloaded, the model finds the planted fact through the gateway's retrieval tool, and the
  client gets one ordinary answer (spliced streams included) while every upstream request is valid. The Bedrock
  client signs with a key the scripted Bedrock does not know: the gateway signs with its own (the environment's);
- a long agent session (16 turns; bench/gateway_clouds.py runs 40) keeps every upstream prompt a byte-for-byte
  extension of the one before (the simulated cache sees at most the one break where the retrieval tools are
  appended) and costs less at the cloud's cache prices than going direct (33-39 % at 16 turns).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from llm_upstream.script import Step
from mcp_offload.apis.registry import api_named
from mcp_offload.providers.registry import PROVIDERS
from support.cloud_flows import FLOWS, flow, tool_result_texts
from support.cloud_sessions import SESSION_FLOWS, TESTED_TURNS, run_session, session_cost, session_script
from support.gateway_process import gateway_process
from support.llm_conversations import NEEDLE, build_log, handles_in

GATEWAY_AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


@pytest.fixture(scope="module")
def clouds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UpstreamServer, str]]:
    """The scripted clouds and one gateway process in front of all three, with AWS credentials of its own."""
    tmp = tmp_path_factory.mktemp("clouds")
    with UpstreamServer(seed=0) as upstream, pytest.MonkeyPatch.context() as patch:
        for name, value in GATEWAY_AWS.items():
            patch.setenv(name, value)
        flags = [f"--{name}-upstream" for name in ("bedrock", "vertex", "azure")]
        extra = [arg for flag in flags for arg in (flag, upstream.base_url)]
        log = tmp / "gateway.log"
        with gateway_process(tmp / "store", upstream.base_url, upstream.openai_url, log, *extra) as url:
            yield upstream, url


def bash_then_search(turn: Turn) -> Step:
    """Run the build; once its log is offloaded, search it; then answer with the line found."""
    if not any(e.name == "Bash" for e in turn.exchanges()):
        return reply("Building.", tool_call("Bash", {"command": "make"}))
    searches = [e for e in turn.exchanges() if e.name == "search_large_output"]
    handles = handles_in(turn)
    if not searches and handles:
        return reply("Searching... ", tool_call("search_large_output", {"handle": handles[0], "pattern": "FATAL",
                                                                         "literal": True}))  # fmt: skip
    found = any(NEEDLE in (e.result or "") for e in searches)
    return reply(f"Found it: {NEEDLE}" if found else "no retrieval result seen")


@pytest.mark.parametrize("name", FLOWS)
def test_offloaded_valid_and_retrieved_through_the_gateway(clouds: tuple[UpstreamServer, str], name: str) -> None:
    upstream, gateway = clouds
    upstream.reset()
    upstream.use(bash_then_search)
    client = flow(name)
    client.user(f"Build the project and tell me what failed ({name}).")
    _, calls = client.turn(gateway)
    assert [c.name for c in calls] == ["Bash"]
    log = build_log()
    client.answer(calls, [log])
    text, calls = client.turn(gateway)
    assert text.endswith(f"Found it: {NEEDLE}") and calls == []  # one answer: the retrieval call stayed inside
    sent = upstream.received(client.api, cloud=client.cloud)
    assert [r.status for r in sent] == [200, 200, 200], [r.error for r in sent]
    offloaded, follow_up = sent[1].json, sent[2].json
    assert any(t.startswith("Stored as out_") for t in tool_result_texts(client.api, offloaded))
    assert all(len(t) < len(log) // 4 for t in tool_result_texts(client.api, offloaded))
    assert any(NEEDLE in t for t in tool_result_texts(client.api, follow_up))
    if client.cloud == "bedrock":  # signed by the gateway (the client's key is not one the scripted Bedrock knows
        assert "Credential=AKIDEXAMPLE/" in sent[1].headers["authorization"]  # for it, AKIDEXAMPLE is the client's)


# -- a long session: golden bytes and cost ------------------------------------------------------------------------
@pytest.mark.parametrize("name", SESSION_FLOWS)
def test_a_long_session_is_byte_stable_and_cheaper_than_direct(clouds: tuple[UpstreamServer, str], name: str) -> None:
    upstream, gateway = clouds
    upstream.reset()
    upstream.use(functools.partial(session_script, turns=TESTED_TURNS))
    api, cloud = flow(name).api, flow(name).cloud
    run_session(name, upstream.base_url, "direct", TESTED_TURNS)
    direct = upstream.received(api, cloud=cloud)
    upstream.reset()
    run_session(name, gateway, "gateway", TESTED_TURNS)
    through = upstream.received(api, cloud=cloud)
    assert all(r.status == 200 for r in direct + through), [r.error for r in through if r.status != 200]
    # the gateway's loops add follow-up calls
    assert len(direct) == TESTED_TURNS + 1 and len(through) > TESTED_TURNS + 1
    breaks = [i for i, r in enumerate(through) if r.usage is not None and not r.usage.extends_previous]
    assert len(breaks) <= 1, breaks  # only where the retrieval tools were appended
    provider = PROVIDERS[cloud]
    model = "gpt-4o" if name == "azure-chat" else "gpt-5" if name == "azure-responses" else ""
    prices = provider.cache_prices(api_named(api), model)
    direct_cost, gateway_cost = session_cost(direct, prices), session_cost(through, prices)
    print(f"{name}: direct {direct_cost:,.0f}, gateway {gateway_cost:,.0f} ({gateway_cost / direct_cost:.1%})")
    assert gateway_cost < 0.7 * direct_cost
