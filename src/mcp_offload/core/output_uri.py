"""The URI of a stored output (`offload://outputs/<handle>`): what the model is told to fetch, and what the MCP
resources are listed and read under. The text the model reads (`render`) and the resources (`server.resources`)
both take it from here, so they never disagree.
"""

from __future__ import annotations

RESOURCE_PREFIX = "offload://outputs/"
RESOURCE_TEMPLATE = RESOURCE_PREFIX + "{handle}"


def uri_of(handle: str) -> str:
    return RESOURCE_PREFIX + handle


def is_output_uri(uri: str) -> bool:
    return uri.startswith(RESOURCE_PREFIX)
