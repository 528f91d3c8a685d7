"""Stored outputs as arguments: an upstream tool's argument written `offload://outputs/<handle>` is replaced by that
output's exact content before the proxy calls the upstream, so a large text goes from one tool to another (read a
document, write it back elsewhere) without passing through the model's context.

The form. An argument value that is exactly an output's URI, at any depth of the arguments (a property, an array
element, a nested object's property): the same URI the output is linked and read under as an MCP resource. It is a
string, so a model can put it in any parameter whatever its declared type, and clients that check arguments against
the upstream's schema before sending (most parameters that carry content are strings) let it through. A bare handle
(`out_…`) is never replaced: it may be a value in its own right, and a model that means the content writes the URI.
A string that merely contains a URI is not replaced either. A string that starts with `offload://outputs/` is
meant as an output: if it is not exactly the URI of an output of the caller's session (a typo, a trailing space,
another session's or an expired output), the call is refused with a clear error, never sent with the string as it is.

What is substituted. For a parameter the upstream's input schema declares as a string (or does not describe), the
output's text, exactly as stored. For a parameter declared only as object / array / number / integer / boolean /
null, the JSON value the output holds (an error if it is not JSON, or not of that type). Binary outputs cannot be
substituted.

Limits, checked before anything is sent (a failed call sends nothing): the parameter's `maxLength`, and
`max_bytes` for all the content substituted into one call (the proxy passes the upstream's transport limit: the
MCP TypeScript SDK's HTTP servers refuse messages over 4 MB). Errors are `OffloadError`s written for the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from mcp_offload.core.output_uri import RESOURCE_PREFIX
from mcp_offload.errors import ExpiredHandle, OffloadError, UnknownHandle
from mcp_offload.store.base import Store
from mcp_offload.store.handles import validate_handle

_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "null": type(None),
}


class ArgumentNotSubstituted(OffloadError):
    """An `offload://outputs/…` argument that cannot be replaced by its content; nothing was sent upstream."""


@dataclass(frozen=True, slots=True)
class PassedOutput:
    """One stored output substituted into an argument: where, which (and the URI the model wrote), how big."""

    where: str  # "content", "options.body", "entities[0]"
    handle: str
    uri: str
    size: int  # bytes
    tokens: int  # the output's tokens as stored (what the model did not have to write)


@dataclass(slots=True)
class Substitution:
    """What one call's arguments became: the arguments to send and the outputs that went into them."""

    arguments: dict[str, Any] | None
    outputs: list[PassedOutput] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(output.size for output in self.outputs)

    def describe(self) -> str:
        """'content ← out_… (1,234,567 bytes)' for each substituted argument, for error notes and logs."""
        return "; ".join(f"{o.where} ← {o.handle} ({o.size:,} bytes)" for o in self.outputs)


def names_output(value: object) -> bool:
    """Whether `value` is meant as a stored output: a string in the URI form (valid or not)."""
    return isinstance(value, str) and value.startswith(RESOURCE_PREFIX)


async def substitute_outputs(
    store: Store,
    scope: str,
    arguments: dict[str, Any] | None,
    input_schema: dict[str, Any] | None,
    *,
    tool: str,
    max_bytes: int,
) -> Substitution:
    """`arguments` with every output URI replaced by its content (a new structure; the given one is not changed).
    Raises `ArgumentNotSubstituted` / `InvalidHandle` / `UnknownHandle` (the same for another session's output as for
    one that never existed)."""
    if not arguments or not _mentions_output(arguments):
        return Substitution(arguments)
    done = Substitution(None)
    root = input_schema or {}
    substituted = await _walk(_Call(store, scope, root, done, tool, max_bytes), arguments, root, "")
    done.arguments = substituted
    return done


def _mentions_output(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_mentions_output(v) for v in value.values())
    if isinstance(value, list):
        return any(_mentions_output(v) for v in value)
    return names_output(value)


@dataclass(frozen=True, slots=True)
class _Call:
    """What stays the same while one call's arguments are walked: where outputs come from, the tool's whole input
    schema (the root of its `$ref`s), what was substituted so far and the byte budget."""

    store: Store
    scope: str
    root: dict[str, Any]
    done: Substitution
    tool: str
    max_bytes: int


async def _walk(call: _Call, value: Any, schema: dict[str, Any], where: str) -> Any:
    schema = _resolved(schema, call.root)
    if isinstance(value, dict):
        properties = _properties(schema, call.root)
        extra = schema.get("additionalProperties")
        out = {}
        for key, inner in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else {})
            path = f"{where}.{key}" if where else key
            out[key] = await _walk(call, inner, sub, path)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        items = items if isinstance(items, dict) else {}
        return [await _walk(call, inner, items, f"{where}[{n}]") for n, inner in enumerate(value)]
    if not names_output(value):
        return value
    return await _content_for(call, value, schema, where or "arguments")


async def _content_for(call: _Call, uri: str, schema: dict[str, Any], where: str) -> Any:
    store, scope, root, done, tool, max_bytes = call.store, call.scope, call.root, call.done, call.tool, call.max_bytes
    handle = validate_handle(uri[len(RESOURCE_PREFIX) :])
    try:
        async with store.open(scope, handle) as output:
            meta = output.meta
            if meta.kind == "blob":
                raise ArgumentNotSubstituted(
                    f"{where}: {handle} is binary ({meta.mime_type or 'application/octet-stream'}, {meta.size:,} "
                    f"bytes); only text outputs can be passed as arguments. Nothing was sent to {tool}."
                )
            if done.bytes + meta.size > max_bytes:
                raise ArgumentNotSubstituted(
                    f"{where}: {handle} is {meta.size:,} bytes; with the other substituted arguments that is over "
                    f"the {max_bytes:,} bytes {tool} accepts in one call. Nothing was sent; pass a smaller output "
                    "(or parts of it, offloaded separately)."
                )
            raw = output.read_bytes(0, meta.size)
    except ExpiredHandle as exc:
        raise ArgumentNotSubstituted(f"{where}: {exc} Nothing was sent to {tool}.") from None
    except UnknownHandle:
        raise UnknownHandle(
            f"{where}: {uri} is not a stored output of this session (unknown or expired handle). Nothing was sent "
            f"to {tool}"
        ) from None
    text = raw.decode("utf-8", "surrogatepass")
    done.outputs.append(PassedOutput(where, handle, uri, meta.size, meta.tokens))
    types = _declared_types(schema, root)
    if not types or "string" in types:
        limit = schema.get("maxLength")
        if isinstance(limit, int) and len(text) > limit:
            raise ArgumentNotSubstituted(
                f"{where}: {handle} has {len(text):,} characters; {tool} accepts at most {limit:,} there (its input "
                "schema's maxLength). Nothing was sent."
            )
        return text
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ArgumentNotSubstituted(
            f"{where}: {tool} takes {' or '.join(sorted(types))} there, and {handle} ({meta.kind}) is not a JSON "
            "value. Nothing was sent."
        ) from None
    if not any(_is_type(value, t) for t in types):
        raise ArgumentNotSubstituted(
            f"{where}: {tool} takes {' or '.join(sorted(types))} there, and {handle} holds a JSON "
            f"{_json_type(value)}. Nothing was sent."
        )
    return value


def _resolved(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a local `$ref` (`#/$defs/X`, `#/definitions/X`) followed (a few levels, no cycles)."""
    for _ in range(8):
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return schema
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
    return {}


def _branches(schema: dict[str, Any], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema and the alternatives it allows (anyOf / oneOf / allOf), resolved."""
    out = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key) or []:
            out.extend(_branches(_resolved(branch, root), root))
    return out


def _properties(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for branch in _branches(schema, root):
        props = branch.get("properties")
        if isinstance(props, dict):
            merged.update(props)
    return merged


def _declared_types(schema: dict[str, Any], root: dict[str, Any]) -> set[str]:
    """The JSON types a parameter allows; empty when the schema does not say (treated as a string)."""
    types: set[str] = set()
    for branch in _branches(schema, root):
        declared = branch.get("type")
        if isinstance(declared, str):
            types.add(declared)
        elif isinstance(declared, list):
            types.update(t for t in declared if isinstance(t, str))
        elif "properties" in branch:
            types.add("object")
        elif "items" in branch:
            types.add("array")
    return types


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    kind = _JSON_TYPES.get(name)
    return kind is not None and isinstance(value, kind)


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "array", "object"):
        if _is_type(value, name):
            return name
    return "string"
