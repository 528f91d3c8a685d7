"""A retried request (issue 27 point 11), for every API through its real SDK: a client that sends the same request
again (a timeout, a replay) gets the same answer text from a second retrieval exchange (the model mints new call
ids). The next turn must restore that second exchange: it is the prompt the provider saw last, so the new turn
extends it byte for byte and reads all of it from the cache."""

from __future__ import annotations

import pytest

from llm_upstream import ApiKind, UpstreamServer, reply
from llm_upstream.cache import OPENAI_STEP_TOKENS
from mcp_offload.apis.names import ApiName
from support.gateway_core import APIS
from support.gateway_server import StartGateway
from support.llm_conversations import build_log, search_then_answer, unmarked
from support.sdk_turns import MESSAGES_KEY, SdkTurns, last_call_id


def cached_share(api: ApiName, prompt_tokens: int) -> int:
    """What the provider reports read from the cache when a prompt's whole prefix of `prompt_tokens` is cached."""
    if api in ("openai_chat", "responses"):
        return prompt_tokens // OPENAI_STEP_TOKENS * OPENAI_STEP_TOKENS
    return prompt_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_retried_request_restores_the_attempt_whose_answer_the_client_kept(
    upstream: UpstreamServer, start_gateway: StartGateway, api: ApiKind, stream: bool
) -> None:
    upstream.use(search_then_answer())
    client = SdkTurns(api, start_gateway(upstream), upstream, stream=stream)
    history = client.history(build_log())
    key = MESSAGES_KEY[api]
    client.send(history)  # the attempt whose answer the client lost
    kept = client.send(history)  # the retry: the answer it keeps
    _, follow_1, _, follow_2 = upstream.received(api, ok_only=True)
    # two exchanges told apart only by the model's call ids; the answers are the same text
    assert last_call_id(api, follow_1.body) != last_call_id(api, follow_2.body)
    assert unmarked(follow_1.body[key][-1]) != unmarked(follow_2.body[key][-1])

    upstream.use([reply("you're welcome")])
    client.send([*history, *kept, client.user("thanks")])
    nxt = upstream.received(api, ok_only=True)[-1]
    restored = nxt.body[key][: len(follow_2.body[key])]
    assert unmarked(restored) == unmarked(follow_2.body[key])  # the kept attempt's exchange, byte for byte
    assert nxt.usage is not None and follow_2.usage is not None
    assert nxt.usage.cache_read == cached_share(api, follow_2.usage.prompt_tokens) and nxt.usage.extends_previous
