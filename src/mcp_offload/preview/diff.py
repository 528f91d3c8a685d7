"""The preview of a unified diff (`git diff`, `git log -p`, `git show`, `diff -u`): files, +/- counts, hunks.

Each file section starts at a `diff --git` line (git) or at a `--- `/`+++ ` pair (diff -u). Its added and
removed lines are counted with `str.count` over the section (no copy, no per-line Python loop) and its hunks are
read from their `@@ -a,b +c,d @@` headers: the lines each hunk covers in the new file (the old file's for a
deletion), and where the section sits in the output, so that one `read_large_output` call shows a file's change.
Sections and hunks past `_MAX_FILES` / `_MAX_HUNKS` are counted, not listed. The file list is shown whole when any of
its forms fits (with hunks, without, one line per folder with counts, then with names only, with fewer ready calls
each time): a diff of 50 files of typical paths lists them all in the 500-token preview.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_offload.preview.calls import RetrievalCall, read_lines, search_pattern
from mcp_offload.preview.fit import plural
from mcp_offload.preview.listing import fit_listing
from mcp_offload.unicode import replace_surrogates

__all__ = ["diff_preview", "looks_like_diff"]

_HUNK_IN_HEAD = re.compile(r"(?m)^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_FILE_IN_HEAD = re.compile(r"(?m)^(?:diff --git |--- \S.*\n\+\+\+ \S)")
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_NAMES = re.compile(r"diff --git (?:\"?a/)?(.*?)\"? (?:\"?b/)?(.*?)\"?$")
_MAX_FILES = 2_000
_MAX_HUNKS = 200
_HUNKS_SHOWN = 4
_PATH_WIDTH = 80


def looks_like_diff(head: str) -> bool:
    return _HUNK_IN_HEAD.search(head) is not None and _FILE_IN_HEAD.search(head) is not None


@dataclass(slots=True)
class _File:
    path: str
    start: int  # character offset of the section
    end: int = 0
    first_line: int = 0
    last_line: int = 0
    added: int = 0
    removed: int = 0
    hunks: list[tuple[int, int, bool]] = field(default_factory=list)  # (first, last, in the old file)
    hunk_count: int = 0
    note: str = ""


def _section_starts(text: str) -> tuple[list[int], bool]:
    """Offsets where file sections start, and whether they are git's `diff --git` lines."""
    git = text.startswith("diff --git ") or text.find("\ndiff --git ") >= 0
    marker = "diff --git " if git else "--- "
    starts: list[int] = [0] if text.startswith(marker) else []
    pos = 0
    while len(starts) <= _MAX_FILES:
        pos = text.find("\n" + marker, pos)
        if pos < 0:
            break
        pos += 1
        if git or text.startswith("+++ ", text.find("\n", pos) + 1):
            starts.append(pos)
    return starts, git


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _path(text: str, start: int, git: bool) -> str:
    first = text[start : _line_end(text, start)]
    plus = text.find("\n+++ ", start, min(len(text), start + 4096))
    minus = text.find("\n--- ", start - 1, min(len(text), start + 4096))
    if plus >= 0 and (not git or text.find("\ndiff --git ", start, plus) < 0):
        name = text[plus + 5 : _line_end(text, plus + 1)].split("\t")[0].strip()
        if name == "/dev/null" and minus >= 0:
            name = text[minus + 5 : _line_end(text, minus + 1)].split("\t")[0].strip()
        if name.startswith(("a/", "b/")):
            name = name[2:]
        if name:
            return name
    if git:
        names = _GIT_NAMES.match(first)
        if names is not None:
            return names.group(2)
    return first[4:].split("\t")[0].strip()


def _scan(text: str) -> tuple[list[_File], int, bool]:
    starts, git = _section_starts(text)
    files: list[_File] = []
    line, counted_to = 1, 0
    for i, start in enumerate(starts[:_MAX_FILES]):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        if git:
            commit = text.find("\ncommit ", start, end)
            if commit >= 0:
                end = commit + 1  # `git log -p`: the next commit's header is not this file's
        f = _File(_path(text, start, git), start, end)
        line += text.count("\n", counted_to, start)
        counted_to = start
        f.first_line = line
        f.added = text.count("\n+", start, end)
        f.removed = text.count("\n-", start, end)
        head_end = text.find("\n@@ ", start, end)
        header = text[start : end if head_end < 0 else head_end]
        if "\n+++ " in header:
            f.added -= 1
        if "\n--- " in header:  # a diff -u section starts at its `--- ` line, which no "\n-" counts
            f.removed -= 1
        if "\nBinary files " in header or header.startswith("Binary files "):
            f.note = "binary"
        elif "\nrename from " in header:
            f.note = "renamed"
        elif "\nnew file mode" in header:
            f.note = "new"
        elif "\ndeleted file mode" in header:
            f.note = "deleted"
        pos = head_end
        while pos >= 0:
            f.hunk_count += 1
            if len(f.hunks) < _MAX_HUNKS:
                match = _HUNK.match(text, pos + 1, _line_end(text, pos + 1))
                if match is not None:
                    old_start, old_n, new_start, new_n = match.groups()
                    new_count = 1 if new_n is None else int(new_n)
                    if new_count:
                        f.hunks.append((int(new_start), int(new_start) + new_count - 1, False))
                    else:
                        old_count = 1 if old_n is None else int(old_n)
                        f.hunks.append((int(old_start), int(old_start) + max(0, old_count - 1), True))
            pos = text.find("\n@@ ", pos + 1, end)
        f.last_line = f.first_line + text.count("\n", start, end) - (1 if text.endswith("\n", start, end) else 0)
        files.append(f)
    commits = (1 if text.startswith("commit ") else 0) + text.count("\ncommit ") if git else 0
    return files, commits, len(starts) > _MAX_FILES


def _hunk_text(f: _File) -> str:
    if not f.hunks:
        return ""
    shown = ", ".join(f"{'old ' if old else ''}{a}–{b}" for a, b, old in f.hunks[:_HUNKS_SHOWN])
    more = f", … ({f.hunk_count})" if f.hunk_count > _HUNKS_SHOWN else ""
    return f"; hunks at {shown}{more}"


def _cut(path: str) -> str:
    path = replace_surrogates(path)
    return path if len(path) <= _PATH_WIDTH else "…" + path[-(_PATH_WIDTH - 1) :]


def _by_folder(files: list[_File], counts: bool = True) -> list[str]:
    """The compact file list: one line per folder, `name +added −removed` per file (a new file's `−0` and note left
    out; only names without `counts`), folders in the order of their first file."""
    folders: dict[str, list[str]] = {}
    for f in files:
        folder, _, name = replace_surrogates(f.path).rpartition("/")
        added_removed = f" +{f.added:,}" if f.note == "new" else f" +{f.added:,} −{f.removed:,}"
        note = f" ({f.note})" if f.note and f.note != "new" else ""
        folders.setdefault(folder, []).append(f"{name}{added_removed}{note}" if counts else name)
    return [f"  {_cut(folder) + '/' if folder else './'} {', '.join(names)}" for folder, names in folders.items()]


def diff_preview(
    text: str, budget: int, count: Callable[[str], int], total_lines: int
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary), or None when no file section is found."""
    files, commits, capped = _scan(text)
    if not files:
        return None
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    distinct = len({f.path for f in files})
    what = f"{plural(commits, 'commit')}, " if commits else ""
    facts = [
        f"diff: {what}{plural(distinct, 'file')}{'+' if capped else ''} changed, +{added:,} −{removed:,}, "
        f"{plural(total_lines, 'line')}; hunk ranges are new-file lines"
    ]

    def entry(f: _File, hunks: bool = True) -> str:
        note = f" ({f.note})" if f.note else ""
        where = f"  L{f.first_line:,}–{f.last_line:,} {_cut(f.path)} +{f.added:,} −{f.removed:,}{note}"
        return where + (_hunk_text(f) if hunks else "")

    biggest = max(files, key=lambda f: f.added + f.removed)
    calls: list[tuple[str, RetrievalCall]] = [
        (f"the change to {_cut(biggest.path)[-40:]}", read_lines(biggest.first_line, biggest.last_line))
    ]
    header = "^diff --git a/" if text.startswith("diff --git ") or "\ndiff --git " in text else r"^\+\+\+ "
    calls.append(("where each file's change starts", search_pattern(header)))
    if commits:
        calls.append(("each commit", search_pattern("^commit [0-9a-f]{7,}", case_sensitive=True)))
    elif len(files) > 1:
        other = files[0] if files[0] is not biggest else files[1]
        calls.append((f"the hunks of {_cut(other.path)[-40:]}", read_lines(other.first_line, other.last_line)))
    # The whole file list is the most useful part: each form is tried until one lists every file (then fewer ready
    # calls, but always one); only when none does are the largest changes listed, with a count of the rest.
    title = "files (lines in this output, +added −removed):"
    grouped_title = "files by folder (+added −removed):"
    forms = [
        (title, [entry(f) for f in files], calls),
        (title, [entry(f, hunks=False) for f in files], calls),
        (grouped_title, _by_folder(files), calls),
        (grouped_title, _by_folder(files), calls[1:2]),
        ("files by folder:", _by_folder(files, counts=False), calls[:2]),
        ("files by folder:", _by_folder(files, counts=False), calls[1:2]),
    ]  # never fewer than one ready call: a list that fits only without one gives way to the largest changes
    for form_title, entries, form_calls in forms:
        listing = fit_listing(facts, form_title, entries, form_calls, budget, count, entries_noun="more files")
        if listing.entries_shown == len(entries):
            break
    else:  # not all fit: the largest changes are the ones worth the room
        files = sorted(files, key=lambda f: -(f.added + f.removed))
        title = "files, largest changes first (lines in this output, +added −removed):"
        listing = fit_listing(facts, title, [entry(f) for f in files], calls, budget, count, entries_noun="more files")
    shown_files = files if listing.entries_shown == len(entries) else files[: listing.entries_shown]
    data: dict[str, Any] = {
        "type": "diff",
        "commits": commits or None,
        "files_changed": distinct,
        "added": added,
        "removed": removed,
        # [path, added, removed, first line, last line] in this output: as compact as the text
        "files": [[replace_surrogates(f.path), f.added, f.removed, f.first_line, f.last_line] for f in shown_files],
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data
