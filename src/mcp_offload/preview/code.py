"""The preview of source code: its language and an outline of its definitions with line ranges, from tree-sitter.

The language is guessed from the content (`guess_language`: the share of the first lines that only that language
writes so: `def f(...):`, `func (`, `fn x(`, `#include`, ...) and confirmed by parsing: when more than 20 % of the
lines sit under syntax errors, the grammar did not fit and the text gets the plain text preview instead. Grammars
are the per-language `tree-sitter-*` wheels (compiled, no download at run time; see pyproject for why these).
Definitions (classes, functions, methods, types, ...) are collected from the syntax tree without descending into
function bodies; the first `_PARSE_CHARS` characters are parsed (~0.1 s), so the work is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use: a server that never sees code does not pay for it
    import tree_sitter

from mcp_offload.preview.calls import RetrievalCall, read_lines, regex_escape, search_pattern
from mcp_offload.preview.fit import plural
from mcp_offload.preview.listing import fit_listing
from mcp_offload.unicode import replace_surrogates

__all__ = ["LANGUAGES", "Definition", "code_preview", "guess_language", "outline_code"]

_PARSE_CHARS = 1_000_000
_MAX_NODES = 200_000
_ERROR_SHARE = 0.2
_NAME_WIDTH = 60
_MIN_SIGNAL_LINES = 3
_SIGNAL_LINES = 60
_MIN_SIGNAL_SHARE = 0.05


def _grammar(name: str) -> object:
    """The compiled grammar of a language (its wheel is imported on first use only)."""
    if name == "python":
        import tree_sitter_python

        return tree_sitter_python.language()
    if name == "javascript":
        import tree_sitter_javascript

        return tree_sitter_javascript.language()
    if name == "typescript":
        import tree_sitter_typescript

        return tree_sitter_typescript.language_typescript()
    if name == "go":
        import tree_sitter_go

        return tree_sitter_go.language()
    if name == "rust":
        import tree_sitter_rust

        return tree_sitter_rust.language()
    if name == "java":
        import tree_sitter_java

        return tree_sitter_java.language()
    if name == "c":
        import tree_sitter_c

        return tree_sitter_c.language()
    import tree_sitter_cpp

    return tree_sitter_cpp.language()


@cache
def _parser(name: str) -> tuple[tree_sitter.Parser, tree_sitter.Query]:
    """The parser of a language, and the query finding its syntax errors anywhere in a tree (in C, no walk)."""
    import tree_sitter

    language = tree_sitter.Language(_grammar(name))
    return tree_sitter.Parser(language), tree_sitter.Query(language, "(ERROR) @error")


def _signal(pattern: str) -> re.Pattern[str]:
    """A line-level signal, searched once over the joined lines (`^`/`$` at each line; `.` stays in its line)."""
    return re.compile(pattern, re.MULTILINE)


# Per language: the lines only it writes so (any one counts), and the node types that define something, with the
# word shown for them. Containers (classes, impls, namespaces) are descended into; function bodies are not.
_SIGNALS: dict[str, re.Pattern[str]] = {
    "python": _signal(
        r"^\s*(?:async\s+)?def \w+\(.*|^\s*class \w+.*:\s*$|^(?:from [\w.]+ import |import \w[\w.]*(?: as \w+)?\s*$)"
        r"|^\s*(?:elif|except|try|finally|else)\b.*:\s*$|^\s*@\w[\w.]*(?:\(.*\))?\s*$"
    ),
    "go": _signal(r"^package \w+\s*$|^func [\w(]|^import \($|^\s*\w+(?:, \w+)* := |^type \w+ (?:struct|interface) \{"),
    "rust": _signal(
        r"^\s*(?:pub(?:\([\w ]+\))? )?(?:async )?(?:fn|struct|enum|trait|impl|mod)\b[ <]|^\s*use [\w:{}, *]+;\s*$"
        r"|^\s*let (?:mut )?\w+|^\s*#\[\w+"
    ),
    "java": _signal(
        r"^package [\w.]+;\s*$|^import (?:static )?[\w.*]+;\s*$|^\s*@Override\b"
        r"|^\s*(?:public|private|protected)(?: static| final| abstract)* [\w<>\[\], ]+ \w+\s*\("
        r"|^\s*public (?:final )?class \w+"
    ),
    "c": _signal(
        r"^#include [<\"]|^#define \w+|^#if(?:n?def)? |^\s*(?:static |extern |inline )*(?:const )?"
        r"(?:unsigned |signed )?(?:int|void|char|long|short|double|float|size_t|bool|struct \w+)\s*\**\s*\w+\s*\("
    ),
    "cpp": _signal(
        r"\bstd::|^\s*(?:template\s*<|namespace \w+|using namespace |class \w+[^;]*$)"
        r"|^\s*(?:public|private|protected):\s*$"
        r"|^#include <(?:iostream|vector|string|memory|map|algorithm|utility)>"
    ),
    "javascript": _signal(
        r"^\s*(?:const|let|var) \w+ = |^\s*(?:export )?(?:async )?function\*? ?\w*\s*\(|=> \{?\s*$|\brequire\(['\"]"
        r"|^\s*import .* from ['\"]|^\s*export (?:default|const|function|class)\b|^\s*module\.exports\b"
    ),
    "typescript": _signal(
        r"^\s*(?:export )?(?:interface|type|enum|namespace|declare) \w+"
        r"|:\s*(?:string|number|boolean|void|any|unknown)\b"
        r"|^\s*(?:public|private|protected|readonly) \w+[?:]|\w+<[A-Z]\w*(?:\[\])?>\("
    ),
}

_DEFINITIONS: dict[str, dict[str, str]] = {
    "python": {"class_definition": "class", "function_definition": "def"},
    "javascript": {
        "class_declaration": "class",
        "function_declaration": "function",
        "generator_function_declaration": "function*",
        "method_definition": "method",
    },
    "go": {"function_declaration": "func", "method_declaration": "method", "type_spec": "type"},
    "rust": {
        "function_item": "fn",
        "struct_item": "struct",
        "enum_item": "enum",
        "trait_item": "trait",
        "impl_item": "impl",
        "mod_item": "mod",
        "macro_definition": "macro_rules!",
        "type_item": "type",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "c": {
        "function_definition": "fn",
        "struct_specifier": "struct",
        "enum_specifier": "enum",
        "union_specifier": "union",
    },
}
_DEFINITIONS["typescript"] = {
    **_DEFINITIONS["javascript"],
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
}
_DEFINITIONS["cpp"] = {**_DEFINITIONS["c"], "class_specifier": "class", "namespace_definition": "namespace"}
_FUNCTIONS = frozenset(
    {"def", "function", "function*", "method", "func", "fn", "constructor", "macro_rules!", "type", "const", "typedef"}
)
_BODYLESS = frozenset({"struct_specifier", "enum_specifier", "union_specifier", "class_specifier"})  # `struct S *p;`
_NAME_NODES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "operator_name", "destructor_name", "type_identifier"}
)

LANGUAGES = tuple(_SIGNALS)


@dataclass(frozen=True, slots=True)
class Definition:
    kind: str  # "class", "def", "fn", ...
    name: str
    start_line: int  # 1-based, inclusive
    end_line: int
    depth: int  # definitions enclosing it


@dataclass(frozen=True, slots=True)
class CodeOutline:
    language: str
    definitions: list[Definition]
    lines_parsed: int
    error_lines: int


def guess_language(text: str, lines: list[str]) -> str | None:
    """The language `text` is written in, or None (prose, or a language without a grammar here).

    Candidates are the languages with the most of the first `lines` only they write so; the first whose grammar
    parses the text (its first `_PARSE_CHARS`: a cut head would leave braces open) with errors on at most a fifth
    of its lines wins. The outline is kept (`outline_code` caches the last few), so the preview does not parse again.
    """
    body = [line for line in lines if line.strip()][:_SIGNAL_LINES]
    block = "\n".join(body)
    if not body or not any(c in block for c in "(){};=:#"):  # prose without any of them is no code: ~0 ms
        return None
    scores = {name: sum(1 for _ in signal.finditer(block)) for name, signal in _SIGNALS.items()}  # one pass each
    if scores["typescript"] and scores["javascript"]:
        scores["typescript"] += scores["javascript"]
    if scores["cpp"] and scores["c"]:
        scores["cpp"] += scores["c"]
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    for name, hits in ranked[:2]:
        if hits < _MIN_SIGNAL_LINES or hits < _MIN_SIGNAL_SHARE * len(body):
            break
        outline = outline_code(text, name)
        if outline.error_lines <= _ERROR_SHARE * outline.lines_parsed:
            return name
    return None


def _name_of(node: tree_sitter.Node, language: str) -> str | None:
    named = node.child_by_field_name("name")
    if named is not None and named.text is not None:
        return named.text.decode("utf-8", "replace")
    if node.type == "impl_item":
        kind = node.child_by_field_name("type")
        trait = node.child_by_field_name("trait")
        if kind is not None and kind.text is not None:
            what = kind.text.decode("utf-8", "replace")
            return f"{trait.text.decode('utf-8', 'replace')} for {what}" if trait is not None and trait.text else what
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        if declarator.type in _NAME_NODES and declarator.text is not None:
            return declarator.text.decode("utf-8", "replace")
        declarator = declarator.child_by_field_name("declarator")
    return None


def _arrow_name(node: tree_sitter.Node) -> str | None:
    """`const f = (…) => …` / `= function …`: the variable's name (JS, TS)."""
    for child in node.named_children:
        if child.type == "variable_declarator":
            value = child.child_by_field_name("value")
            name = child.child_by_field_name("name")
            if value is not None and value.type in ("arrow_function", "function_expression") and name is not None:
                return name.text.decode("utf-8", "replace") if name.text else None
    return None


def outline_code(text: str, language: str) -> CodeOutline:
    """The definitions of `text` (its first `_PARSE_CHARS` characters, cut at a line end) in document order."""
    if len(text) > _PARSE_CHARS:
        cut = text.rfind("\n", 0, _PARSE_CHARS)
        text = text[: cut + 1 if cut > 0 else _PARSE_CHARS]
    return _outline(text, language)


@lru_cache(maxsize=4)
def _outline(source: str, language: str) -> CodeOutline:
    parser, errors = _parser(language)
    tree = parser.parse(source.encode("utf-8", "surrogatepass"))
    kinds = _DEFINITIONS[language]
    found: list[Definition] = []
    error_rows: set[int] = set()
    visits = 0
    stack: list[tuple[tree_sitter.Node, int]] = [(tree.root_node, 0)]
    while stack and visits < _MAX_NODES:
        node, depth = stack.pop()
        visits += 1
        if node.type == "ERROR" or node.is_missing:
            error_rows.update(range(node.start_point.row, node.end_point.row + 1))
            continue
        kind = kinds.get(node.type)
        if kind is None and node.type in ("lexical_declaration", "variable_declaration"):
            arrow = _arrow_name(node)
            if arrow is not None:
                found.append(Definition("const", arrow, node.start_point.row + 1, node.end_point.row + 1, depth))
            continue
        if kind is not None and not (node.type in _BODYLESS and node.child_by_field_name("body") is None):
            name = _name_of(node, language)
            if name is not None:
                start = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
                found.append(Definition(kind, name, start.start_point.row + 1, node.end_point.row + 1, depth))
                if kind in _FUNCTIONS:
                    continue
                depth += 1
        if kind is None and node.parent is not None and node.type not in _CONTAINERS:
            continue
        stack.extend((child, depth) for child in reversed(node.named_children))
    if tree.root_node.has_error:  # errors inside function bodies too, which the walk above skips
        from tree_sitter import QueryCursor

        for node in QueryCursor(errors).captures(tree.root_node).get("error", []):
            error_rows.update(range(node.start_point.row, node.end_point.row + 1))
    lines = source.count("\n") + (0 if source.endswith("\n") else 1)
    found.sort(key=lambda d: (d.start_line, d.depth))
    return CodeOutline(language, found, lines, len(error_rows))


# Nodes that may hold definitions without being one (bodies, blocks, wrappers); anything else (expressions,
# statements inside functions) is not walked.
_CONTAINERS = frozenset(
    {
        "block",
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "interface_body",
        "enum_body",
        "export_statement",
        "decorated_definition",
        "template_declaration",
        "linkage_specification",
        "if_statement",
        "else_clause",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "statement_block",
        "expression_statement",
        "ambient_declaration",
        "type_declaration",
        "internal_module",
        "module",
        "program",
        "source_file",
        "translation_unit",
        "try_statement",
        "except_clause",
    }
)


def code_preview(
    text: str, language: str, budget: int, count: Callable[[str], int], total_lines: int
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary), or None when the grammar does not fit the text (many syntax errors)."""
    outline = outline_code(text, language)
    if outline.error_lines > _ERROR_SHARE * outline.lines_parsed or not outline.definitions:
        return None
    defs = outline.definitions
    partial = (
        f" (outline of the first {plural(outline.lines_parsed, 'line')})" if outline.lines_parsed < total_lines else ""
    )
    facts = [f"{language} source: {plural(total_lines, 'line')}, {plural(len(defs), 'definition')}{partial}"]
    if outline.error_lines:
        facts.append(f"{plural(outline.error_lines, 'line')} did not parse")

    def entry(d: Definition, members: int = 0) -> str:
        more = f" (+{members} inside)" if members else ""
        return f"  {'  ' * d.depth}{d.start_line}–{d.end_line} {d.kind} {_cut(d.name)}{more}"

    entries = [entry(d) for d in defs]
    if count("\n".join(entries)) > budget * 3 // 5:  # too many to list: top-level ones, with how many each holds
        tops = [d for d in defs if d.depth == 0]
        entries = [
            entry(d, sum(1 for x in defs if x.depth > 0 and d.start_line <= x.start_line <= d.end_line)) for d in tops
        ]
    calls: list[tuple[str, RetrievalCall]] = []
    biggest = max(defs, key=lambda d: d.end_line - d.start_line)
    calls.append(
        (f"the source of {biggest.kind} {_cut(biggest.name, 30)}", read_lines(biggest.start_line, biggest.end_line))
    )
    word = re.sub(r"\W", "", biggest.name.split("::")[-1].split(".")[-1].split(" ")[-1])
    if word:
        calls.append((f"where {_cut(word, 30)} is defined and used", search_pattern(rf"\b{regex_escape(word)}\b")))
    listing = fit_listing(facts, "definitions (lines):", entries, calls, budget, count, entries_noun="more definitions")
    shown_defs = (defs if len(entries) == len(defs) else [d for d in defs if d.depth == 0])[: listing.entries_shown]
    data: dict[str, Any] = {
        "type": "code",
        "language": language,
        "lines": total_lines,
        # [first line, last line, "kind name", depth]: as compact as the text (a client may show this instead)
        "definitions": [[d.start_line, d.end_line, f"{d.kind} {_cut(d.name)}", d.depth] for d in shown_defs],
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data


def _cut(name: str, width: int = _NAME_WIDTH) -> str:
    name = replace_surrogates(" ".join(name.split()))
    return name if len(name) <= width else name[: width - 1] + "…"
