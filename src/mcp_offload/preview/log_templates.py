"""Log message templates mined with Drain (He et al., ICWS 2017): lines -> templates with counts and first lines.

Drain groups log lines by a fixed-depth prefix tree: first by their token count, then by their first tokens (a
token holding a digit counts as a variable, `<*>`), and at a leaf joins a line to the most similar template when at
least `similarity` of the template's fixed tokens equal the line's; the tokens that differ become `<*>`. This is the
algorithm of IBM's `drain3` (its `Drain` class, same tree, similarity and defaults; a new template masks its
digit-holding tokens at once, as drain3's usual masking setup does; a leaf holds at most 16 templates, so lines of
random words cannot make it quadratic), written out here because `drain3`
0.9.11 (its last release, 2022) pins `cachetools==4.2.1` and `jsonpickle==1.5.1` exactly: installing it would force
five-year-old versions of two widely shared packages into every environment mcp-offload is installed into, for
~100 lines of algorithm, and none of its persistence (Kafka, Redis, files) is used here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import eq

__all__ = ["Template", "TemplateMiner", "tokenize"]

WILDCARD = "<*>"
_MAX_MASKS = 1 << 16  # tokens whose mask a miner remembers (a sample's words; bounded for a log of unique ones)
_MAX_TOKENS = 64  # longer lines are mined on their first tokens (a log message's shape is in its start)


@dataclass(slots=True)
class Template:
    tokens: list[str]
    count: int
    first_line: int  # 1-based line number of the first line it matched
    example: str  # that line
    params: int = 0  # how many of its tokens are WILDCARD

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


@dataclass(slots=True)
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    templates: list[Template] = field(default_factory=list)
    # A leaf's answers for lines seen since its templates last changed: masked tokens -> template (None: unmatched).
    # Lines of one message differ only in masked numbers, so most lines of a real log are a dict lookup.
    seen: dict[tuple[str, ...], Template | None] = field(default_factory=dict)
    # For each token position, which of `templates` (by index) hold which token there: a line's equal tokens are
    # counted by lookups, not by comparing it with every template (built when first needed, kept up to date).
    positions: list[dict[str, list[int]]] | None = None

    def index_positions(self) -> list[dict[str, list[int]]]:
        if self.positions is None:
            self.positions = []
            for j, template in enumerate(self.templates):
                self._add_positions(j, template.tokens)
        return self.positions

    def added(self, template: Template) -> None:
        self.templates.append(template)
        if self.positions is not None:
            self._add_positions(len(self.templates) - 1, template.tokens)

    def merged(self, j: int, old: list[str], new: list[str]) -> None:
        if self.positions is None:
            return
        for at, (was, now) in enumerate(zip(old, new, strict=True)):
            if was != now:
                self.positions[at][was].remove(j)
                self.positions[at].setdefault(now, []).append(j)

    def _add_positions(self, j: int, tokens: list[str]) -> None:
        assert self.positions is not None
        while len(self.positions) < len(tokens):
            self.positions.append({})
        for at, token in enumerate(tokens):
            self.positions[at].setdefault(token, []).append(j)


def tokenize(line: str) -> list[str]:
    return line.split(None, _MAX_TOKENS)[:_MAX_TOKENS]


_has_digit = re.compile(r"\d").search


class TemplateMiner:
    """Drain's online clustering: `add` each line in order, then `templates` (most frequent first)."""

    def __init__(
        self,
        depth: int = 4,
        similarity: float = 0.4,
        max_children: int = 100,
        max_templates: int = 2000,
        max_per_leaf: int = 16,
    ):
        self._prefix_tokens = max(1, depth - 3)  # drain3: root, token count, then depth - 3 first tokens
        self._similarity = similarity
        self._max_children = max_children
        self._max_templates = max_templates
        self._max_per_leaf = max_per_leaf
        self.unmatched = 0  # lines that fit no template once a leaf (or the miner) was full
        self._root = _Node()
        self._all: list[Template] = []
        self._masks: dict[str, str] = {}

    def add(self, line: str, line_number: int) -> Template | None:
        """Join `line` to its template (or start one); None for a blank line or when a template cap is reached."""
        tokens = tokenize(line)
        if not tokens:
            return None
        masks = self._masks
        # as drain3's masking turns them into <NUM>; a token's mask is remembered (a log repeats its words)
        masked = [masks.get(t) or self._mask(t) for t in tokens]
        leaf = self._leaf(masked)
        key = tuple(masked)
        if key in leaf.seen:  # the leaf is as it was when this line's twin was joined: the same answer
            known = leaf.seen[key]
            if known is None:
                self.unmatched += 1
            else:
                known.count += 1
            return known
        at = self._most_similar(leaf, masked)
        best = None if at is None else leaf.templates[at[0]]
        if best is not None and at is not None and at[1] / len(masked) >= self._similarity:
            if at[1] < len(masked):
                merged = [old if old == new else WILDCARD for old, new in zip(best.tokens, masked, strict=True)]
                if merged != best.tokens:
                    leaf.merged(at[0], best.tokens, merged)
                    best.tokens, best.params = merged, merged.count(WILDCARD)
                    leaf.seen.clear()
            best.count += 1
            leaf.seen[key] = best
            return best
        if len(self._all) >= self._max_templates or len(leaf.templates) >= self._max_per_leaf:
            # Lines too varied to share templates (random words after one prefix) would each start one, and every
            # later line would be compared with all of them: quadratic. A full leaf takes no new templates.
            self.unmatched += 1
            leaf.seen[key] = None
            return None
        template = Template(masked, 1, line_number, line, masked.count(WILDCARD))
        leaf.added(template)
        leaf.seen.clear()
        self._all.append(template)
        return template

    def _most_similar(self, leaf: _Node, masked: list[str]) -> tuple[int, int] | None:
        """(index in the leaf, equal tokens) of the template most like `masked`, by Drain's similarity (the
        template's tokens equal to the line's, over its length; a masked token equals a masked one, as drain3's
        <NUM> equals <NUM>); ties go to the template with more parameters, then to the earlier one. None when the
        leaf has none (or, with a similarity threshold above 0, none shares a token)."""
        templates = leaf.templates
        if not templates:
            return None
        if self._similarity <= 0:  # every template may qualify, those sharing no token too: compare each
            equal = [sum(map(eq, t.tokens, masked)) for t in templates]
            j = max(range(len(templates)), key=lambda i: (equal[i], templates[i].params, -i))
            return j, equal[j]
        # The templates holding each of the line's tokens at its position, counted (C loops throughout); a
        # template sharing no token has similarity 0, below the threshold, and cannot be the one that matches.
        counts = Counter(chain.from_iterable(map(dict.get, leaf.index_positions(), masked, repeat(()))))
        top = max(counts.values(), default=0)
        if top / len(masked) < self._similarity:  # none is similar enough (most lines of a full leaf)
            return None
        tied = [j for j, n in counts.items() if n == top]
        return max(tied, key=lambda j: (templates[j].params, -j)), top

    def _mask(self, token: str) -> str:
        masked = WILDCARD if _has_digit(token) else token
        if len(self._masks) < _MAX_MASKS:
            self._masks[token] = masked
        return masked

    def templates(self) -> list[Template]:
        """Most frequent first; ties by first appearance."""
        return sorted(self._all, key=lambda t: (-t.count, t.first_line))

    def _leaf(self, masked: list[str]) -> _Node:
        length = str(len(masked))
        node = self._root.children.get(length) or self._root.children.setdefault(length, _Node())
        for key in masked[: self._prefix_tokens]:
            child = node.children.get(key)
            if child is None:
                if len(node.children) >= self._max_children:
                    key = WILDCARD
                    child = node.children.get(key)
                if child is None:
                    child = node.children[key] = _Node()
            node = child
        return node
