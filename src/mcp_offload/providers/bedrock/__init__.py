"""Amazon Bedrock: the routes, the upstream, the credentials and the prices (`provider.py`), the gateway's own SigV4
signing with the standard AWS credential chain (`signing.py`), and the AWS event-stream framing of its streams
(`eventstream.py`). Needs botocore (`pip install 'mcp-offload[bedrock]'`); without it a Bedrock call gets Bedrock's
error document saying so."""

from mcp_offload.providers.bedrock.provider import BedrockProvider

__all__ = ["BedrockProvider"]
