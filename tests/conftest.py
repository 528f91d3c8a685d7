"""Shared fixtures: settings on a temporary store, the services, and an in-memory server.

The suite runs in parallel (pytest-xdist; `.ci/run` passes `-n`): support/isolation.py gives each worker its own
temp directory, XDG directories, Redis database and ports, and holds each test to leaving the environment as it
found it. Its docstring has the rules a new test follows to stay parallel-safe.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import hypothesis
import pytest

from mcp_offload.core.services import Services, build_services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.settings import Settings

# Fixtures shared across folders live beside their helpers in the `support` package, registered here once;
# llm_upstream is the scripted LLM API (tests/llm_upstream/) for the gateway tests.
pytest_plugins = [
    "support.isolation",
    "pytester",  # tests/ci/test_isolation.py runs small suites of its own
    "support.store",
    "support.jq_runner",
    "llm_upstream.plugin",
    "support.gateway_server",
    "support.litellm_proxy",
    "support.litellm_stack",
]

# Generation speed is the machine's, not the code's: on a loaded 2-core machine running the suite in parallel,
# Hypothesis's "too slow" health check failed tests that found nothing wrong. Per-test settings add their own.
hypothesis.settings.register_profile(
    "mcp-offload", suppress_health_check=[hypothesis.HealthCheck.too_slow], deadline=None
)
hypothesis.settings.load_profile("mcp-offload")


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
