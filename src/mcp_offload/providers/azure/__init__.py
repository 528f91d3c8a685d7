"""Azure OpenAI: Chat Completions and Responses under a resource's deployment and v1 paths, `api-key` or an Entra
bearer passed through, the resource as the upstream, OpenAI's prices by the deployment's model (`provider.py`)."""

from mcp_offload.providers.azure.provider import AzureProvider

__all__ = ["AzureProvider"]
