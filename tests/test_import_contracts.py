"""The import-linter independence contracts in pyproject.toml name every package of the registries, and nothing
else: one LLM API's package imports no other's, one provider's no other's. The contracts are static TOML; this test
fails when they and `apis.registry.APIS` / `providers.registry.PROVIDERS` disagree (a new package added without its
contract row, or a row left behind)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mcp_offload.apis.registry import APIS
from mcp_offload.providers.registry import PROVIDERS

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def independence(prefix: str) -> list[str]:
    contracts: list[dict[str, Any]] = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    found = [
        c["modules"]
        for c in contracts
        if c["type"] == "independence" and all(m.startswith(prefix) for m in c["modules"])
    ]
    assert len(found) == 1, f"one independence contract over {prefix}*"
    return [m.removeprefix(prefix) for m in found[0]]


def package_of(obj: object) -> str:
    return type(obj).__module__.split(".")[2]  # mcp_offload.<layer>.<package>.module


def test_each_api_package_is_in_the_independence_contract() -> None:
    assert sorted(independence("mcp_offload.apis.")) == sorted({package_of(api) for api in APIS.values()})


def test_each_provider_package_is_in_the_independence_contract() -> None:
    assert sorted(independence("mcp_offload.providers.")) == sorted({package_of(p) for p in PROVIDERS.values()})
