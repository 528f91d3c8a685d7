"""The cloud providers' facts: which requests are their API calls (and what their paths say), where they go upstream,
what scopes a session, their error documents, and Bedrock's signing (checked by the scripted Bedrock's verifier, which
recomputes SigV4 with botocore) and event-stream framing (decoded by botocore)."""

from __future__ import annotations

import base64
import json

import anyio
import pytest
from botocore.eventstream import EventStreamBuffer

from llm_upstream import aws_frames
from llm_upstream.aws_auth import AwsAuthError, check
from mcp_offload.apis.registry import api_named
from mcp_offload.providers.base import IncomingRequest
from mcp_offload.providers.bedrock import eventstream
from mcp_offload.providers.bedrock.signing import AwsSigner
from mcp_offload.providers.registry import PROVIDERS, call_for_request, relay_provider

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX = "/v1/projects/p1/locations/us-east5/publishers"
ROUTES = [  # (path, provider, api, model, stream)
    (f"/model/{CLAUDE}/invoke", "bedrock", "anthropic", CLAUDE, False),
    (f"/model/{CLAUDE}/invoke-with-response-stream", "bedrock", "anthropic", CLAUDE, True),
    (f"/model/{CLAUDE}/converse", "bedrock", "converse", CLAUDE, False),
    (f"/model/{CLAUDE}/converse-stream", "bedrock", "converse", CLAUDE, True),
    (f"{VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:rawPredict", "vertex", "anthropic",
     "claude-sonnet-4-5@20250929", False),
    (f"{VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", "vertex", "anthropic",
     "claude-sonnet-4-5@20250929", True),
    ("/v1beta1/projects/p1/locations/global/publishers/google/models/gemini-2.5-pro:generateContent", "vertex",
     "gemini", "gemini-2.5-pro", False),
    ("/v1/projects/p1/locations/us/publishers/google/models/gemini-2.5-pro:streamGenerateContent", "vertex",
     "gemini", "gemini-2.5-pro", True),
    ("/openai/deployments/prod-4o/chat/completions", "azure", "openai_chat", "prod-4o", None),
    ("/openai/responses", "azure", "responses", None, None),
    ("/openai/v1/chat/completions", "azure", "openai_chat", None, None),
    ("/openai/v1/responses", "azure", "responses", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("path", "provider", "api", "model", "stream"), ROUTES)
def test_each_cloud_routes_its_calls(path: str, provider: str, api: str, model: str | None, stream: bool) -> None:
    found = call_for_request(IncomingRequest("POST", path))
    assert found is not None
    assert (found[0].name, found[1].api.name, found[1].model, found[1].stream) == (provider, api, model, stream)


def test_bedrock_sends_the_model_id_as_one_segment_and_frames_its_streams() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
    found = call_for_request(IncomingRequest("POST", f"/model/{arn}/converse-stream"))
    assert found is not None and found[1].model == arn
    assert found[1].upstream_path == "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-" \
                                     "profile%2Fabc/converse-stream"  # fmt: skip
    assert found[1].framing is eventstream.CONVERSE
    invoke = call_for_request(IncomingRequest("POST", f"/model/{CLAUDE}/invoke-with-response-stream"))
    assert invoke is not None and invoke[1].framing is eventstream.INVOKE


def test_relayed_paths_go_to_their_cloud() -> None:
    for path, provider in ((f"/model/{CLAUDE}/count-tokens", "bedrock"), ("/openai/models", "azure"),
                           ("/v1beta1/projects/p/locations/l/publishers/google/models/m:countTokens", "vertex"),
                           ("/v1beta/models/gemini-2.5-flash:countTokens", "gemini")):  # fmt: skip
        assert relay_provider(IncomingRequest("POST", path)).name == provider


def test_vertex_goes_to_the_locations_endpoint_unless_told() -> None:
    vertex = PROVIDERS["vertex"]
    base = vertex.upstream.default
    assert base is not None
    for location, host in (("us-east5", "https://us-east5-aiplatform.googleapis.com"),
                           ("global", "https://aiplatform.googleapis.com"),
                           ("eu", "https://aiplatform.eu.rep.googleapis.com")):  # fmt: skip
        path = f"/v1/projects/p/locations/{location}/publishers/google/models/m:generateContent"
        assert vertex.upstream_url(base, path, "alt=sse") == f"{host}{path}?alt=sse"
    assert vertex.upstream_url("http://psc.example", "/v1/projects/p/x", "").startswith("http://psc.example/v1/")


def test_sessions_are_scoped_by_what_does_not_rotate(monkeypatch: pytest.MonkeyPatch) -> None:
    signed = {"authorization": "AWS4-HMAC-SHA256 Credential=ASIAROTATING/20261128/us-east-1/bedrock/aws4_request, x"}
    bedrock, vertex, azure = PROVIDERS["bedrock"], PROVIDERS["vertex"], PROVIDERS["azure"]
    assert bedrock.session_headers(IncomingRequest("POST", "/model/m/invoke", headers=signed)) == {}
    key = {"authorization": "Bearer ABSKkey"}
    assert bedrock.session_headers(IncomingRequest("POST", "/model/m/invoke", headers=key)) == key
    token = {"authorization": "Bearer ya29.changes-hourly"}
    path = f"{VERTEX}/anthropic/models/claude-x:rawPredict"
    assert vertex.session_headers(IncomingRequest("POST", path, headers=token)) == {
        "authorization": "vertex project p1"
    }
    assert azure.session_headers(IncomingRequest("POST", "/openai/v1/responses", headers={"api-key": "k"})) == {
        "api-key": "k"
    }
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    assert bedrock.upstream.default == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    assert bedrock.upstream.default is None


def test_each_cloud_answers_in_its_own_error_document() -> None:
    bedrock = PROVIDERS["bedrock"].error_answer(api_named("converse"), 429, "x", "slow down")
    assert json.loads(bedrock.body) == {"message": "slow down"}
    assert dict(bedrock.headers)["x-amzn-errortype"].startswith("ThrottlingException:")
    vertex = PROVIDERS["vertex"].error_answer(api_named("gemini"), 403, "x", "no")
    assert json.loads(vertex.body) == {"error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}}
    azure = PROVIDERS["azure"].error_answer(api_named("openai_chat"), 503, "x", "none")
    assert json.loads(azure.body) == {"error": {"code": "ServiceUnavailable", "message": "none"}}


def test_the_gateways_signature_is_bedrocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Signed with the chain's credentials for the upstream's host and the body sent: the scripted Bedrock's
    verifier (SigV4 recomputed by botocore) accepts it, and refuses it for any other body."""
    environment = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    url = f"http://127.0.0.1:9/model/{CLAUDE.replace(':', '%3A')}/converse"
    body = b'{"messages": []}'
    client = [("content-type", "application/json"), ("authorization", "AWS4-HMAC-SHA256 Credential=AKIDCLIENT/"
              "20261128/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=" + "0" * 64)]  # fmt: skip
    signed = anyio.run(AwsSigner().sign, "POST", url, client, body)
    assert signed is not None
    headers = {**dict(signed), "host": "127.0.0.1:9"}
    assert "Credential=AKIDEXAMPLE/" in headers["authorization"]
    assert check("POST", url, headers, body, region="us-east-1").principal == "aws:AKIDEXAMPLE"
    with pytest.raises(AwsAuthError) as refused:
        check("POST", url, headers, b'{"messages": [1]}', region="us-east-1")
    assert refused.value.error_type == "InvalidSignatureException"


def test_event_stream_frames_read_and_write_as_bedrock_and_botocore_do() -> None:
    upstream = aws_frames.chunk({"type": "message_start", "message": {"id": "m"}}) + aws_frames.exception(
        "throttlingException", "slow down"
    )
    reader = eventstream.INVOKE.reader()
    events = [e for i in range(0, len(upstream), 5) for e in reader.feed(upstream[i : i + 5])]
    assert [e.name for e in events] == ["message_start", "error"] and reader.pending == b""
    written = EventStreamBuffer()
    written.add_data(b"".join(eventstream.INVOKE.frame(e.raw) for e in events))
    frames = [m.to_response_dict() for m in written]  # botocore checks both CRCs of every frame
    inner = base64.b64decode(json.loads(frames[0]["body"])["bytes"])
    assert json.loads(inner) == {"type": "message_start", "message": {"id": "m"}}
    assert frames[1]["headers"][":exception-type"] == "throttlingException" and frames[1]["status_code"] == 400
    broken = bytearray(upstream)
    broken[9] ^= 0xFF  # the prelude's CRC no longer checks
    assert [e.name for e in eventstream.INVOKE.reader().feed(bytes(broken))] == ["internalServerException"]
