"""The scripted clouds (tests/llm_upstream: bedrock_app, vertex_app, azure_app) validate as the clouds do, driven by the
clouds' real SDKs: boto3 `bedrock-runtime` and `anthropic.AnthropicBedrock` (SigV4 recomputed with botocore, event-
stream frames decoded by botocore with their CRCs), `anthropic.AnthropicVertex` and `google-genai` with
`vertexai=True` (resource paths, OAuth bearer), `openai.AzureOpenAI` (api-version, deployments, keys); and they
simulate each cloud's prompt cache."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import boto3
import botocore.exceptions
import httpx2
import openai
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from google import genai
from google.genai import types as genai_types
from google.oauth2.credentials import Credentials as GoogleCredentials

from llm_upstream import UpstreamServer, reply, tool_call
from llm_upstream.aws_auth import CREDENTIALS

KEY = CREDENTIALS["AKIDEXAMPLE"]
SESSION = CREDENTIALS["ASIAEXAMPLESESSION01"]
EXPIRED = CREDENTIALS["ASIAEXAMPLEEXPIRED01"]
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BASH = {"toolSpec": {"name": "Bash", "inputSchema": {"json": {"type": "object",
        "properties": {"command": {"type": "string"}}}}}}  # fmt: skip
LONG = "Rule: read every line of the build log before you answer. " * 200  # ~2,400 tokens


def bedrock(upstream: UpstreamServer, access: str = KEY.access_key, secret: str = KEY.secret_key,
            token: str | None = None) -> Any:  # fmt: skip
    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=upstream.base_url,
                        aws_access_key_id=access, aws_secret_access_key=secret, aws_session_token=token,
                        config=Config(retries={"max_attempts": 0}))  # fmt: skip


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def test_bedrock_converse_and_stream_through_boto3(llm_upstream: UpstreamServer) -> None:
    llm_upstream.use([reply("Listing.", tool_call("Bash", {"command": "ls"})), reply("Done.")])
    client = bedrock(llm_upstream)
    first = client.converse(modelId=CLAUDE, messages=[user("list files")], toolConfig={"tools": [BASH]})
    assert first["stopReason"] == "tool_use"
    use = first["output"]["message"]["content"][1]["toolUse"]
    assert use["name"] == "Bash" and use["input"] == {"command": "ls"}
    history = [user("list files"), first["output"]["message"],
               {"role": "user", "content": [{"toolResult": {"toolUseId": use["toolUseId"],
                                                            "content": [{"text": "a.txt"}]}}]}]  # fmt: skip
    events = list(client.converse_stream(modelId=CLAUDE, messages=history, toolConfig={"tools": [BASH]})["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e) == "Done."
    assert events[-1]["metadata"]["usage"]["inputTokens"] > 0
    sent = llm_upstream.received("converse", ok_only=True, cloud="bedrock")
    assert [r.path for r in sent] == [f"/model/{CLAUDE}/converse", f"/model/{CLAUDE}/converse-stream"]


def test_bedrock_invoke_model_body_and_stream_frames(llm_upstream: UpstreamServer) -> None:
    client = bedrock(llm_upstream, SESSION.access_key, SESSION.secret_key, SESSION.token)
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    whole = json.loads(client.invoke_model(modelId=CLAUDE, body=json.dumps(body))["body"].read())
    assert whole["type"] == "message" and whole["content"][0]["text"]
    stream = client.invoke_model_with_response_stream(modelId=CLAUDE, body=json.dumps(body))["body"]
    events = [json.loads(e["chunk"]["bytes"]) for e in stream]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert "ping" not in [e["type"] for e in events]
    assert events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] > 0
    for refused, why in ((dict(body, model="x"), "extraneous key [model]"), ({"max_tokens": 5, "messages": []},
                         "required key [anthropic_version]")):  # fmt: skip
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            client.invoke_model(modelId=CLAUDE, body=json.dumps(refused))
        assert caught.value.response["Error"]["Code"] == "ValidationException" and why in str(caught.value)


def test_bedrock_refuses_what_aws_refuses(llm_upstream: UpstreamServer) -> None:
    cases = [
        (bedrock(llm_upstream, secret="not-the-secret"), "InvalidSignatureException"),
        (bedrock(llm_upstream, access="AKIDUNKNOWN0000000000"), "UnrecognizedClientException"),
        (bedrock(llm_upstream, EXPIRED.access_key, EXPIRED.secret_key, EXPIRED.token), "ExpiredTokenException"),
        (bedrock(llm_upstream, SESSION.access_key, SESSION.secret_key, "another-token"), "UnrecognizedClientException"),
    ]
    for client, code in cases:
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            client.converse(modelId=CLAUDE, messages=[user("x")])
        assert caught.value.response["Error"]["Code"] == code
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    unsigned = httpx2.post(f"{llm_upstream.base_url}/model/{CLAUDE}/converse", json={"messages": [user("x")]})
    assert unsigned.status_code == 403 and unsigned.json() == {"message": "Missing Authentication Token"}
    assert unsigned.headers["x-amzn-errortype"].startswith("MissingAuthenticationTokenException:")
    with pytest.raises(botocore.exceptions.ClientError) as caught:
        bedrock(llm_upstream).converse(modelId="not-a-model", messages=[user("x")])
    assert caught.value.response["Error"]["Code"] == "ValidationException"


def _signed(url: str, body: bytes, secret: str = KEY.secret_key) -> dict[str, str]:
    request = AWSRequest(method="POST", url=url, data=body, headers={"content-type": "application/json"})
    SigV4Auth(Credentials(KEY.access_key, secret), "bedrock", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def test_a_body_changed_after_signing_fails_the_signature(llm_upstream: UpstreamServer) -> None:
    url = f"{llm_upstream.base_url}/model/{CLAUDE}/converse"
    body = json.dumps({"messages": [user("the original")]}).encode()
    headers = _signed(url, body)
    assert httpx2.post(url, content=body, headers=headers).status_code == 200
    changed = json.dumps({"messages": [user("rewritten")]}).encode()
    refused = httpx2.post(url, content=changed, headers=headers)
    assert refused.status_code == 403
    assert refused.headers["x-amzn-errortype"].startswith("InvalidSignatureException:")
    bearer = httpx2.post(url, content=changed, headers={"authorization": "Bearer ABSKbedrock-api-key-example"})
    assert bearer.status_code == 200  # a Bedrock API key does not sign the body


def test_stream_frames_carry_crcs_and_the_exception_frame(llm_upstream: UpstreamServer) -> None:
    url = f"{llm_upstream.base_url}/model/{CLAUDE}/converse-stream"
    body = json.dumps({"messages": [user("hello")]}).encode()
    raw = httpx2.post(url, content=body, headers=_signed(url, body)).content
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    kinds = [message.to_response_dict()["headers"][":event-type"] for message in buffer]
    assert kinds[0] == "messageStart" and kinds[-1] == "metadata"
    corrupt = bytearray(raw)
    corrupt[20] ^= 0xFF
    broken = EventStreamBuffer()
    broken.add_data(bytes(corrupt))
    with pytest.raises(ChecksumMismatch):
        list(broken)
    llm_upstream.use([reply("a long answer " * 20, error_after_events=3)])
    stream = bedrock(llm_upstream).converse_stream(modelId=CLAUDE, messages=[user("hello")])["stream"]
    with pytest.raises(botocore.exceptions.EventStreamError) as caught:
        list(stream)
    assert caught.value.response["Error"]["Code"] == "modelStreamErrorException"


def test_converse_validation_speaks_bedrock(llm_upstream: UpstreamServer) -> None:
    client = bedrock(llm_upstream)
    use = {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "Bash", "input": {}}}]}
    cases = [
        ([user("a"), use, user("b")], {"tools": [BASH]}, "Expected toolResult blocks at messages.2.content"),
        ([user("a"), use], None, "The toolConfig field must be defined"),
        ([user("a"), user("b")], None, "must alternate between user and assistant"),
        ([{"role": "assistant", "content": [{"text": "x"}]}], None, "must start with a user message"),
    ]
    for messages, tools, message in cases:
        kwargs: dict[str, Any] = {"toolConfig": tools} if tools else {}
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            client.converse(modelId=CLAUDE, messages=messages, **kwargs)
        assert caught.value.response["Error"]["Code"] == "ValidationException"
        assert message in caught.value.response["Error"]["Message"]


def test_bedrock_caches_at_cache_points_per_account(llm_upstream: UpstreamServer) -> None:
    client = bedrock(llm_upstream)
    system = [{"text": LONG}, {"cachePoint": {"type": "default"}}]
    first = client.converse(modelId=CLAUDE, system=system, messages=[user("one")])["usage"]
    second = client.converse(modelId=CLAUDE, system=system, messages=[user("two")])["usage"]
    assert first["cacheWriteInputTokens"] > 2000 and first["cacheReadInputTokens"] == 0
    assert second["cacheReadInputTokens"] == first["cacheWriteInputTokens"] and second["cacheWriteInputTokens"] == 0
    other = bedrock(llm_upstream, SESSION.access_key, SESSION.secret_key, SESSION.token)
    assert other.converse(modelId=CLAUDE, system=system, messages=[user("two")])["usage"]["cacheReadInputTokens"] == 0
    unmarked = client.converse(modelId=CLAUDE, system=[{"text": LONG}], messages=[user("two")])["usage"]
    assert unmarked["cacheReadInputTokens"] == 0 and unmarked["cacheWriteInputTokens"] == 0
    invoke = anthropic.AnthropicBedrock(
        aws_access_key=KEY.access_key, aws_secret_key=KEY.secret_key, aws_region="us-east-1",
        base_url=llm_upstream.base_url, max_retries=0,
    )  # fmt: skip
    marked = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    usages = [invoke.messages.create(model=CLAUDE, max_tokens=16, system=marked,  # type: ignore[arg-type]
                                     messages=[{"role": "user", "content": q}]).usage for q in ("a", "b")]  # fmt: skip
    assert (
        usages[0].cache_creation_input_tokens
        and usages[1].cache_read_input_tokens == usages[0].cache_creation_input_tokens
    )


def _vertex_claude(
    upstream: UpstreamServer, project: str = "test-project", token: str = "ya29.vertex-test-token"
) -> Any:
    return anthropic.AnthropicVertex(region="us-east5", project_id=project, access_token=token,
                                     base_url=upstream.base_url + "/v1", max_retries=0)  # fmt: skip


def test_vertex_claude_resource_paths_and_google_auth_errors(llm_upstream: UpstreamServer) -> None:
    client = _vertex_claude(llm_upstream)
    message = client.messages.create(model="claude-sonnet-4-5@20250929", max_tokens=32,
                                     messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert message.content[0].type == "text"
    sent = llm_upstream.received("anthropic", cloud="vertex")[-1]
    path = "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
    assert sent.path == path + ":rawPredict" and sent.json["anthropic_version"] and "model" not in sent.json
    for project, token, error, status in (("other-project", "ya29.vertex-test-token", anthropic.PermissionDeniedError,
                                           "PERMISSION_DENIED"),
                                          ("test-project", "ya29.expired-token", anthropic.AuthenticationError,
                                           "UNAUTHENTICATED")):  # fmt: skip
        with pytest.raises(error) as caught:
            _vertex_claude(llm_upstream, project, token).messages.create(
                model="claude-sonnet-4-5@20250929", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.body["error"]["status"] == status  # type: ignore[index]


def test_vertex_gemini_paths_roles_and_its_cache_minimum(llm_upstream: UpstreamServer) -> None:
    client = genai.Client(vertexai=True, project="test-project", location="us-central1",
                          credentials=GoogleCredentials(token="ya29.vertex-test-token"),  # type: ignore[no-untyped-call]
                          http_options=genai_types.HttpOptions(base_url=llm_upstream.base_url))  # fmt: skip
    assert client.models.generate_content(model="gemini-2.5-flash", contents="hello").text
    sent = llm_upstream.received("gemini", cloud="vertex")[-1]
    assert sent.path == "/v1beta1/projects/test-project/locations/us-central1/publishers/google/models/" \
                        "gemini-2.5-flash:generateContent"  # fmt: skip
    for lines, cached in (
        (200, False),
        (400, True),
    ):  # ~1,500 tokens: over the Gemini API's 1,024, under Vertex's 2,048
        text = "\n".join(f"line {i}: value {i * 7919 % 1000}" for i in range(lines))
        for _ in range(2):
            usage = client.models.generate_content(model="gemini-2.5-flash", contents=text).usage_metadata
        assert usage is not None and usage.prompt_token_count
        assert 1024 < usage.prompt_token_count < 2048 if not cached else usage.prompt_token_count > 2048
        assert bool(usage.cached_content_token_count) is cached
    roleless = httpx2.post(llm_upstream.base_url + sent.path, json={"contents": [{"parts": [{"text": "x"}]}]},
                           headers={"authorization": "Bearer ya29.vertex-test-token"})  # fmt: skip
    assert roleless.status_code == 400 and "valid role" in roleless.json()["error"]["message"]


def test_azure_versions_deployments_and_keys(llm_upstream: UpstreamServer) -> None:
    def azure(version: str = "2025-04-01-preview", key: str = "azure-test-key") -> openai.AzureOpenAI:
        return openai.AzureOpenAI(azure_endpoint=llm_upstream.base_url, api_key=key, api_version=version,
                                  max_retries=0)  # fmt: skip

    chat = azure().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert chat.model == "gpt-4o-2024-11-20"
    assert azure().responses.create(model="prod-gpt5", input="hi").output_text
    v1 = openai.OpenAI(base_url=llm_upstream.base_url + "/openai/v1/", api_key="azure-test-key", max_retries=0)
    assert v1.responses.create(model="gpt-5", input="hi").output_text
    with pytest.raises(openai.BadRequestError, match="API version not supported"):
        azure("2020-01-01").chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="2025-03-01-preview and later"):
        azure("2024-10-21").responses.create(model="gpt-5", input="hi")
    with pytest.raises(openai.NotFoundError, match="API deployment for this resource does not exist"):
        azure().chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.AuthenticationError, match="Access denied"):
        azure(key="wrong").chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    missing = httpx2.post(
        llm_upstream.base_url + "/openai/deployments/gpt-4o/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}]},
        headers={"api-key": "azure-test-key"},
    )
    assert missing.status_code == 404 and missing.json() == {"error": {"code": "404", "message": "Resource not found"}}
