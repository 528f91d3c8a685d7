"""OpenClaw's config file read as OpenClaw reads it, for the few values wrap needs of it (2026.9: src/config/io.ts,
includes.ts, env substitution):

- JSON5 (OpenClaw tries JSON first, then JSON5: so do we, with `json5`, a pure-Python parser that follows the JSON5
  spec, as OpenClaw's `json5` package does);
- `$include` anywhere: a path or a list of paths, relative to the including file; a list is deep-merged in order, and
  the sibling keys of the directive are merged over what it includes (objects merge, arrays concatenate, any other
  value the later one wins); at most 10 levels;
- `${NAME}` in a string (upper-case names only; `$${NAME}` is a literal `${NAME}`), substituted from the environment.

Anything wrap cannot read so is a `WrapError` naming the file and what to do, never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import json5

from mcp_offload.cli.wrap.agents.base import WrapError

INCLUDE = "$include"
MAX_DEPTH = 10  # OpenClaw's
VARIABLE = re.compile(r"(\$?)\$\{([A-Z_][A-Z0-9_]*)\}")


def load_config(path: Path) -> dict[str, Any]:
    """The config in `path` with its `$include`s resolved (variables are left as they are: `substitute` the values
    you read)."""
    config = resolve(parse(path), path, 0)
    if not isinstance(config, dict):
        raise WrapError(f"{path} is not an OpenClaw config (a JSON5 object); run OpenClaw without wrap to see why")
    return config


def parse(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WrapError(f"cannot read OpenClaw's config {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return json5.loads(text)
    except ValueError as exc:
        raise WrapError(f"cannot read {path} as JSON5 ({exc}); run OpenClaw without wrap to see why") from None


def resolve(value: Any, path: Path, depth: int) -> Any:
    """`value` (read from `path`) with every `$include` in it replaced by what it includes."""
    if isinstance(value, list):
        return [resolve(item, path, depth) for item in value]
    if not isinstance(value, dict):
        return value
    rest = {key: resolve(item, path, depth) for key, item in value.items() if key != INCLUDE}
    if INCLUDE not in value:
        return rest
    if depth >= MAX_DEPTH:
        raise WrapError(f"{path}: $include nests deeper than {MAX_DEPTH} levels (OpenClaw refuses it too)")
    target = value[INCLUDE]
    names = [target] if isinstance(target, str) else target
    if not isinstance(names, list) or not names or not all(isinstance(name, str) and name for name in names):
        raise WrapError(f"{path}: $include takes a path or a list of paths")
    included: Any = {}
    for name in names:
        file = path.parent / name
        loaded = resolve(parse(file), file, depth + 1)
        included = loaded if len(names) == 1 else merge(included, loaded)
    if not rest:
        return included
    if not isinstance(included, dict):
        raise WrapError(f"{path}: keys beside an $include need the included file to hold an object")
    return merge(included, rest)


def merge(base: Any, over: Any) -> Any:
    """OpenClaw's merge of an include and what is laid over it: objects key by key, arrays concatenated, any other
    value replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        merged = dict(base)
        for key, value in over.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(over, list):
        return [*base, *over]
    return over


def substitute(text: str, environ: Mapping[str, str], where: str) -> str:
    """`text` with its `${NAME}`s from `environ`; a name that is not set (or empty) is refused, naming `where`."""

    def value(found: re.Match[str]) -> str:
        if found[1]:  # $${NAME}: the literal ${NAME}
            return found[0][1:]
        name = found[2]
        if not environ.get(name):
            raise WrapError(f"{where} names ${{{name}}}, which is not set in this environment")
        return environ[name]

    return VARIABLE.sub(value, text)
