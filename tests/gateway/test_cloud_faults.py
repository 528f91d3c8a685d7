"""Bad input on the clouds, through the gateway with each cloud's real SDK: a cloud whose upstream is not configured
answers in that cloud's own error document naming the setting; missing or expired credentials are the cloud's own
401/403, relayed (never a gateway error); an event stream that breaks mid-way ends with Bedrock's own exception
event; a Bedrock call without botocore says which extra to install."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import botocore.exceptions
import openai
import pytest
from botocore.config import Config

from llm_upstream import UpstreamServer, reply
from mcp_offload.providers.bedrock import provider as bedrock_provider
from mcp_offload.providers.bedrock.signing import AwsSigner
from mcp_offload.providers.registry import PROVIDERS
from support.cloud_flows import AWS_KEY, CLAUDE_BEDROCK
from support.gateway_server import GatewayServer, StartGateway, upstream_bases

NO_AWS_FILES = {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
           "AWS_DEFAULT_REGION")  # fmt: skip


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """An AWS environment of the test's making (nothing of the machine's), and a signer that resolves it anew."""
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in NO_AWS_FILES.items():
        monkeypatch.setenv(name, value)
    bedrock = PROVIDERS["bedrock"]
    assert isinstance(bedrock, bedrock_provider.BedrockProvider)
    monkeypatch.setattr(bedrock, "signer", AwsSigner())
    yield monkeypatch


def _boto3(gateway: GatewayServer, key: tuple[str, str] = AWS_KEY) -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=gateway.base_url,
                        aws_access_key_id=key[0], aws_secret_access_key=key[1],
                        config=Config(retries={"max_attempts": 0}))  # fmt: skip


def _converse(client: Any, stream: bool = False) -> Any:
    call = client.converse_stream if stream else client.converse
    return call(modelId=CLAUDE_BEDROCK, messages=[{"role": "user", "content": [{"text": "hello"}]}])


def _without(upstream: UpstreamServer, *names: str) -> dict[str, Any]:
    from mcp_offload.gateway.upstream import ProviderConfig

    bases = {name: (None if name in names else base) for name, base in upstream_bases(upstream.base_url).items()}
    return {"upstream": ProviderConfig(bases=bases, read_timeout_s=30)}


def test_a_cloud_without_its_upstream_answers_in_its_own_document(
    upstream: UpstreamServer, start_gateway: StartGateway, aws: pytest.MonkeyPatch
) -> None:
    gateway = start_gateway(upstream, **_without(upstream, "azure", "bedrock"))
    azure = openai.AzureOpenAI(azure_endpoint=gateway.base_url, api_key="azure-test-key",
                               api_version="2025-04-01-preview", max_retries=0)  # fmt: skip
    with pytest.raises(openai.InternalServerError) as caught:
        azure.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 503
    assert caught.value.body == {"code": "ServiceUnavailable", "message": (
        "The gateway has no upstream for Azure OpenAI: start it with --azure-upstream URL (or set "
        "MCP_OFFLOAD_AZURE_UPSTREAM).")}  # fmt: skip
    with pytest.raises(botocore.exceptions.ClientError) as refused:  # no AWS_REGION either: no default
        _converse(_boto3(gateway))
    assert refused.value.response["Error"]["Code"] == "ServiceUnavailableException"
    assert "--bedrock-upstream URL" in refused.value.response["Error"]["Message"]
    assert upstream.requests == []


def test_missing_or_expired_credentials_are_the_clouds_own_refusal(
    upstream: UpstreamServer, start_gateway: StartGateway, aws: pytest.MonkeyPatch
) -> None:
    gateway = start_gateway(upstream)
    # the gateway has no AWS credentials: the request goes as the client signed it, for the gateway's host
    with pytest.raises(botocore.exceptions.ClientError) as unsigned:
        _converse(_boto3(gateway))
    assert unsigned.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert unsigned.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    aws.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLEEXPIRED01")
    aws.setenv("AWS_SECRET_ACCESS_KEY", "expiredSecretKeyExample000000000000000")
    aws.setenv("AWS_SESSION_TOKEN", "expired")
    aws.setattr(PROVIDERS["bedrock"], "signer", AwsSigner())
    with pytest.raises(botocore.exceptions.ClientError) as expired:
        _converse(_boto3(gateway))
    assert expired.value.response["Error"]["Code"] == "ExpiredTokenException"
    vertex = anthropic.AnthropicVertex(region="us-east5", project_id="test-project", access_token="ya29.expired-token",
                                       base_url=gateway.base_url + "/v1", max_retries=0)  # fmt: skip
    with pytest.raises(anthropic.AuthenticationError) as google:
        vertex.messages.create(model="claude-sonnet-4-5@20250929", max_tokens=8,
                               messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    assert google.value.body["error"]["status"] == "UNAUTHENTICATED"  # type: ignore[index]
    azure = openai.AzureOpenAI(azure_endpoint=gateway.base_url, api_key="wrong", api_version="2025-04-01-preview",
                               max_retries=0)  # fmt: skip
    with pytest.raises(openai.AuthenticationError, match="Access denied"):
        azure.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert all(r.status in (401, 403) for r in upstream.requests)


def test_a_broken_bedrock_stream_ends_with_bedrocks_exception_event(
    upstream: UpstreamServer, start_gateway: StartGateway, aws: pytest.MonkeyPatch
) -> None:
    aws.setenv("AWS_ACCESS_KEY_ID", AWS_KEY[0])
    aws.setenv("AWS_SECRET_ACCESS_KEY", AWS_KEY[1])
    gateway = start_gateway(upstream)
    client = _boto3(gateway)
    upstream.use([reply("a long answer " * 30, drop_after_events=4)])  # the upstream connection is cut
    with pytest.raises(botocore.exceptions.EventStreamError) as cut:
        list(_converse(client, stream=True)["stream"])
    assert cut.value.response["Error"]["Code"] == "internalServerException"
    assert "broke off" in cut.value.response["Error"]["Message"]
    upstream.use([reply("a long answer " * 30, error_after_events=4)])  # Bedrock's own exception frame
    with pytest.raises(botocore.exceptions.EventStreamError) as relayed:
        list(_converse(client, stream=True)["stream"])
    assert relayed.value.response["Error"]["Code"] == "modelStreamErrorException"
    upstream.use([reply("a long answer " * 30, drop_after_events=4)])
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}
    stream = client.invoke_model_with_response_stream(modelId=CLAUDE_BEDROCK, body=json.dumps(body))["body"]
    with pytest.raises(botocore.exceptions.EventStreamError) as invoke:
        list(stream)
    assert invoke.value.response["Error"]["Code"] == "internalServerException"


def test_bedrock_without_botocore_names_the_extra(
    upstream: UpstreamServer, start_gateway: StartGateway, aws: pytest.MonkeyPatch
) -> None:
    aws.setattr(bedrock_provider, "botocore_available", lambda: False)
    gateway = start_gateway(upstream)
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        _converse(_boto3(gateway))
    assert refused.value.response["Error"]["Message"] == (
        "Amazon Bedrock support needs botocore: pip install 'mcp-offload[bedrock]'"
    )
    assert upstream.requests == []
