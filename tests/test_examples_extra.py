"""The `examples` extra installs what examples/ imports (a fresh install's "offline examples" failed with
`No module named 'anthropic'`, `openai`, `langchain`), each with a lower bound the installed test run satisfies."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions, version
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _imported_distributions() -> set[str]:
    names: set[str] = set()
    for example in (ROOT / "examples").glob("*.py"):
        for node in ast.walk(ast.parse(example.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    third_party = names - set(sys.stdlib_module_names) - {"__future__", "mcp_offload"}
    found = packages_distributions()
    missing = sorted(name for name in third_party if name not in found)
    assert not missing, f"imported by examples/ but not installed: {missing}"
    return {_normal(dist) for name in third_party for dist in found[name]}


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_the_examples_extra_covers_every_import_of_examples() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    wanted = [Requirement(line) for line in extras["examples"]]
    named = {_normal(r.name) for r in wanted}
    imported = _imported_distributions()
    assert {"anthropic", "openai", "langchain-core"} <= imported
    assert imported <= named, sorted(imported - named)
    for requirement in wanted:
        assert any(spec.operator == ">=" for spec in requirement.specifier), f"{requirement} has no lower bound"
        assert version(requirement.name) in requirement.specifier, f"the installed {requirement.name} is outside it"
