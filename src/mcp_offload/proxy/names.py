"""The proxy's names: an upstream tool `t` of server `s` is listed as `s__t` (the prefix is the server name unless
the config sets one; "" means no prefix). Tool and prompt names keep to `[A-Za-z0-9_.-]` and 128 characters: a name
that had to be changed or cut, or that another server (or one of our own tools) already took, gets a short hash of
its origin appended, so every name is unique and stays the same from one listing to the next. `NameTable` is
everything the proxy lists and where each name or URI goes (router.py's module docstring says the rest)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types

from mcp_offload.proxy.upstream import Upstream

SEPARATOR = "__"
MAX_NAME = 128
_INVALID = re.compile(r"[^A-Za-z0-9_.-]")
_HASH_CHARS = 8


def clean_prefix(prefix: str) -> str:
    return _INVALID.sub("_", prefix)[:64]


def _hashed(base: str, origin: str) -> str:
    digest = hashlib.sha256(origin.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{base[: MAX_NAME - _HASH_CHARS - 1]}_{digest}"


def public_name(prefix: str, name: str, taken: set[str], origin: str) -> str:
    """A valid, unique, stable public name for upstream `name` (see the module docstring)."""
    raw = f"{prefix}{SEPARATOR}{name}" if prefix else name
    clean = _INVALID.sub("_", raw)
    if clean != raw or len(clean) > MAX_NAME or clean in taken:
        clean = _hashed(clean, origin)
    return clean


@dataclass(frozen=True, slots=True)
class Route:
    upstream: Upstream
    name: str  # the upstream's own name
    public: str
    tool: types.Tool | None = None


@dataclass(slots=True)
class NameTable:
    """Everything the proxy lists, and where each name or URI goes. Rebuilt when a catalog changes."""

    tools: dict[str, Route] = field(default_factory=dict)
    listed: list[types.Tool] = field(default_factory=list)
    prompts: dict[str, Route] = field(default_factory=dict)
    listed_prompts: list[types.Prompt] = field(default_factory=list)
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    uri_owner: dict[str, Upstream] = field(default_factory=dict)
    template_owners: list[tuple[re.Pattern[str], Upstream]] = field(default_factory=list)


def build_table(upstreams: Sequence[Upstream], reserved: set[str]) -> NameTable:
    table = NameTable()
    taken = set(reserved)
    taken_prompts: set[str] = set()
    for upstream in upstreams:
        spec, catalog = upstream.spec, upstream.catalog
        prefix = clean_prefix(spec.prefix)
        for tool in catalog.tools:
            name = public_name(prefix, tool.name, taken, f"{spec.name}\0{tool.name}")
            taken.add(name)
            table.tools[name] = Route(upstream, tool.name, name, tool)
            table.listed.append(_public_tool(tool, name, keep_output_schema=tool.name in spec.options.never))
        for prompt in catalog.prompts:
            name = public_name(prefix, prompt.name, taken_prompts, f"{spec.name}\0{prompt.name}")
            taken_prompts.add(name)
            table.prompts[name] = Route(upstream, prompt.name, name)
            table.listed_prompts.append(prompt.model_copy(update={"name": name}))
        for resource in catalog.resources:
            table.resources.append(resource.model_copy(update={"name": _prefixed(prefix, resource.name)}))
            table.uri_owner.setdefault(str(resource.uri), upstream)
        for template in catalog.templates:
            table.templates.append(template.model_copy(update={"name": _prefixed(prefix, template.name)}))
            table.template_owners.append((_template_regex(template.uri_template), upstream))
    return table


def _prefixed(prefix: str, name: str) -> str:
    return f"{prefix}{SEPARATOR}{name}" if prefix else name


def _public_tool(tool: types.Tool, name: str, *, keep_output_schema: bool) -> types.Tool:
    update: dict[str, Any] = {"name": name}
    if not keep_output_schema:
        update["output_schema"] = None
    return tool.model_copy(update=update)


def _template_regex(template: str) -> re.Pattern[str]:
    """RFC 6570 template → a regex matching its expansions ({var}: one path segment; {+var}, {#var}, …: anything)."""
    out, pos = [], 0
    for match in re.finditer(r"\{([^}]*)\}", template):
        out.append(re.escape(template[pos : match.start()]))
        expr = match.group(1)
        out.append("[^/?#]*" if expr[:1].isalnum() or expr[:1] == "_" else ".*")
        pos = match.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.DOTALL)
