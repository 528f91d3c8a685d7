"""pytest plugin: the `llm_upstream` fixture, a started UpstreamServer with the default script, stopped after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_upstream.server import UpstreamServer


@pytest.fixture
def llm_upstream() -> Iterator[UpstreamServer]:
    with UpstreamServer(seed=0) as upstream:
        yield upstream
