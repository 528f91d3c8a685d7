"""preview/diff.py: the file list, the cheapest and most useful part of a diff's preview, is shown whole up to at
least 50 files of typical paths (in a more compact form when the full one does not fit), then with a count."""

from __future__ import annotations

import random

import pytest

from mcp_offload.preview import build_preview
from mcp_offload.tokens import load_counter

FOLDERS = [
    "src/mcp_offload/gateway/", "src/mcp_offload/preview/", "src/mcp_offload/store/redis/", "src/mcp_offload/cli/",
    "tests/gateway/", "tests/preview/", "docs/", "", "src/mcp_offload/retrieve/sql/worker/", ".ci/",
]  # fmt: skip
WORDS = ["app", "stream", "record", "history", "session", "budget", "table", "outline", "connection", "publish"]


def _paths(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    paths: list[str] = []
    while len(paths) < n:
        path = f"{rng.choice(FOLDERS)}{rng.choice(WORDS)}_{rng.choice(WORDS)}{rng.choice(['.py', '.md', '.sh'])}"
        if path not in paths:
            paths.append(path)
    return paths


def _git_diff(paths: list[str], lines_each: int = 40) -> str:
    out = []
    for i, path in enumerate(paths):
        out.append(f"diff --git a/{path} b/{path}\nindex {i:07x}..{i + 1:07x} 100644\n--- a/{path}\n+++ b/{path}\n")
        out.append(f"@@ -10,{lines_each} +10,{lines_each + 1} @@ def f{i}():\n")
        out.extend(f" context line {j} of {path}\n" for j in range(lines_each - 1))
        out.append(f"-old {i}\n+new {i}\n+added {i}\n")
    return "".join(out)


@pytest.mark.parametrize("files", [12, 30, 50])
def test_the_file_list_is_whole_up_to_fifty_files(files: int) -> None:
    counter = load_counter("o200k_base")
    paths = _paths(files)
    preview = build_preview(_git_diff(paths), "text", budget_tokens=470, count_tokens=counter.count)
    assert preview.tokens <= 470
    assert preview.text.startswith(f"diff: {files} files changed, +{2 * files} −{files},")
    assert "more files" not in preview.text
    for path in paths:
        folder, _, name = path.rpartition("/")
        assert path in preview.text or any(
            line.startswith(f"  {folder + '/' if folder else './'} ") and name in line.split(" ", 3)[-1]
            for line in preview.text.split("\n")
        ), path
    assert len(preview.data["files"]) == files
    assert preview.data["calls"], "the whole file list never costs the last ready call"


def test_past_what_fits_the_largest_changes_are_listed_with_a_count() -> None:
    counter = load_counter("o200k_base")
    paths = [f"src/very/deeply/nested/package_{i}/module_with_a_long_name_{i}.py" for i in range(200)]
    preview = build_preview(_git_diff(paths), "text", budget_tokens=470, count_tokens=counter.count)
    assert preview.tokens <= 470
    shown = len(preview.data["files"])
    assert 0 < shown < 200
    assert f"… {200 - shown:,} more files" in preview.text


@pytest.mark.parametrize("files", [40, 50, 60, 70, 80, 90])
def test_a_diff_preview_always_names_a_ready_call(files: int) -> None:
    """A list that fits only without any ready call gives way to the largest changes (the repository's own diff of
    12 commits once previewed as a whole folder list with no call to follow)."""
    counter = load_counter("o200k_base")
    preview = build_preview(_git_diff(_paths(files, seed=files)), "text", budget_tokens=470, count_tokens=counter.count)
    assert preview.tokens <= 470
    assert preview.data["calls"]
