"""Amazon Bedrock's Converse API (`/model/{modelId}/converse`, `/converse-stream`): the message format
(`messages.py`), the request body (`history.py`), answers and streams in the retrieval loop (`dialect.py`, with the
follow-up's cache checkpoint: `cache_points.py`), Bedrock's error document (`errors.py`); `api.py` puts them behind
the `LlmApi` protocol. Served only by the Bedrock provider (`providers/bedrock`), which frames its streams."""

from mcp_offload.apis.converse.api import CONVERSE, ConverseApi

__all__ = ["CONVERSE", "ConverseApi"]
