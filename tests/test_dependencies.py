"""Every third-party module `src/` imports is a declared dependency of the distribution: a base dependency, or one
of the extra that carries the module's front end (an integration imported only where its extra is installed, or
Bedrock's botocore, `mcp-offload[bedrock]`, imported only by its provider package)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# modules whose distribution is not installed where the tests run (LiteLLM lives in its own venv): their extra
NOT_HERE = {"litellm": "litellm", "fastapi": "litellm"}
# the folders whose imports an extra may carry (each checks for its extra at run time and says which to install)
EXTRA_HOMES = ("/integrations/", "/providers/bedrock/")


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!;\[ ]", r)[0].lower().replace("_", "-") for r in requirements}


def _imports() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "src" / "mcp_offload").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top != "mcp_offload":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_import_is_a_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = _names(project["dependencies"])
    extras = {name: _names(reqs) for name, reqs in project["optional-dependencies"].items()}
    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for module, files in sorted(_imports().items()):
        if module in NOT_HERE:
            assert NOT_HERE[module] in extras, module
            continue
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        assert names, f"{module} (imported by {sorted(files)[0]}) is not installed"
        declared = names & base or any(names & e for e in extras.values())
        only_extra_homes = all(any(home in f for home in EXTRA_HOMES) for f in files)
        if not (names & base or (declared and only_extra_homes)):
            undeclared.append(f"{module} ({', '.join(sorted(names))}) in {sorted(files)[0]}")
    assert undeclared == [], "imported but not declared in pyproject.toml: " + "; ".join(undeclared)
