"""Shared fixtures: settings on a temporary store, the services, and an in-memory server."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_offload.core.services import Services, build_services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.settings import Settings

# Fixtures shared across folders live beside their helpers in the `support` package, registered here once;
# llm_upstream is the scripted LLM API (tests/llm_upstream/) for the gateway tests.
pytest_plugins = [
    "support.store",
    "support.jq_runner",
    "llm_upstream.plugin",
    "support.gateway_server",
    "support.litellm_proxy",
    "support.litellm_stack",
]


@pytest.fixture(autouse=True, scope="session")
def _no_personal_config(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Servers started without --config read the per-user servers.json: never the developer's own in tests."""
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("xdg-config"))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def settings(store_dir: Path) -> Settings:
    return Settings(store=str(store_dir), jq_timeout_s=3.0, jq_workers=1)


@pytest.fixture
async def services(settings: Settings) -> AsyncIterator[Services]:
    services = build_services(settings)
    try:
        yield services
    finally:
        await services.aclose()


@pytest.fixture
def server(services: Services) -> OffloadServer:
    return build_server(services)
