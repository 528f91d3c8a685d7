"""preview/lookup_examples.py: previews that answer. Every jq example shown for a corpus of generated documents
(directory trees like server-filesystem's `directory_tree`, GitHub-API-like responses, nested orders, JSON Lines)
runs through the real `query_large_output` tool and yields something; the lookups fit the document."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.preview.lookup_examples import id_select, pick_id_field, tree_examples
from support import text_of
from support.preview import assert_paths_work, len4, preview_of, run_jq


def directory_tree(packages: int = 80, seed: int = 1) -> list[dict[str, Any]]:
    """What server-filesystem's directory_tree returns: entries with name, type and children (directories only)."""
    rng = random.Random(seed)

    def files(prefix: str, n: int) -> list[dict[str, Any]]:
        return [{"name": f"{prefix}{i}.{rng.choice(['py', 'md', 'json'])}", "type": "file"} for i in range(n)]

    tree = []
    for p in range(packages):
        modules: list[dict[str, Any]] = [
            {"name": f"mod{m}", "type": "directory", "children": files(f"f{p}_{m}_", rng.randint(0, 6))}
            for m in range(rng.randint(1, 4))
        ]
        if p == packages // 2:
            modules[0]["children"].append({"name": "plan.md", "type": "file"})
        src = {"name": "src", "type": "directory", "children": modules}
        tree.append({"name": f"pkg{p:03d}", "type": "directory", "children": [src, *files("README", 1)]})
    return tree


def github_issues(n: int = 300, seed: int = 2) -> dict[str, Any]:
    rng = random.Random(seed)
    items = []
    for i in range(n):
        items.append(
            {
                "url": f"https://api.github.com/repos/acme/app/issues/{4000 + i}",
                "id": 2_100_000_000 + i * 7,
                "node_id": f"I_kwDOA{i:06d}",
                "number": 4000 + i,
                "title": f"Crash when opening file {i}",
                "user": {"login": f"dev{i % 23}", "id": 1000 + i % 23, "type": "User"},
                "labels": [{"id": 10 + k, "name": rng.choice(["bug", "ui", "p1"])} for k in range(i % 3)],
                "state": rng.choice(["open", "open", "closed"]),
                "comments": rng.randint(0, 40),
                "body": "Steps to reproduce:\n1. open\n2. crash\n" * rng.randint(1, 4),
            }
        )
    return {"total_count": 1234, "incomplete_results": False, "items": items}


def github_repos(n: int = 150) -> list[dict[str, Any]]:
    return [
        {
            "id": 70_000 + i,
            "node_id": f"R_kgDO{i:05d}",
            "name": f"repo-{i}",
            "full_name": f"acme/repo-{i}",
            "private": i % 4 == 0,
            "owner": {"login": "acme", "id": 1},
            "visibility": "private" if i % 4 == 0 else "public",
            "topics": ["mcp", "tools"][: i % 3],
        }
        for i in range(n)
    ]


def nested_orders(n: int = 250, seed: int = 3) -> dict[str, Any]:
    rng = random.Random(seed)
    orders = [
        {
            "order_id": f"ORD-{i:05d}",
            "customer": {"id": 500 + i % 40, "name": f"Customer {i % 40}", "address": {"city": "Lyon", "zip": "69001"}},
            "status": rng.choice(["paid", "paid", "shipped", "refunded"]),
            "lines": [{"sku": f"SKU-{rng.randint(1, 99)}", "qty": rng.randint(1, 5)} for _ in range(rng.randint(1, 4))],
            "total": {"amount": round(rng.random() * 500, 2), "currency": "EUR"},
        }
        for i in range(n)
    ]
    return {"data": {"orders": orders, "page": {"next": None, "size": n}}}


def outline_tree(depth: int = 5, width: int = 3) -> dict[str, Any]:
    """An org chart / AST: nodes with a title and a `nodes` array of the same shape."""

    def node(path: str, level: int) -> dict[str, Any]:
        out: dict[str, Any] = {"title": f"section {path}", "kind": "section" if level < depth else "leaf"}
        if level < depth:
            out["nodes"] = [node(f"{path}.{k}", level + 1) for k in range(width)]
        return out

    return {"version": 2, "root": node("1", 1)}


def event_lines(n: int = 400) -> str:
    return "\n".join(
        json.dumps({"uuid": f"6f1c{i:08x}-evt", "type": "click" if i % 3 else "view", "user": {"id": i % 9}})
        for i in range(n)
    )


CORPUS: dict[str, str] = {
    "directory_tree": json.dumps(directory_tree(), indent=2),
    "directory_tree_minified": json.dumps(directory_tree(seed=5), separators=(",", ":")),
    "github_issues": json.dumps(github_issues(), indent=2),
    "github_repos": json.dumps(github_repos()),
    "nested_orders": json.dumps(nested_orders(), indent=1),
    "outline_tree": json.dumps(outline_tree(), indent=2),
    "event_lines": event_lines(),
}

# What each document's preview must offer to answer "where is X / what is the record of X" in one query.
EXPECTED: dict[str, list[str]] = {
    "directory_tree": ['[paths(objects and .name == "', '.. | objects | select(.name == "'],
    "directory_tree_minified": ['[paths(objects and .name == "'],
    "github_issues": [".items[] | select(.id == 21000"],
    "github_repos": [".[] | select(.id == 70"],
    "nested_orders": ['.data.orders[] | select(.order_id == "ORD-0'],
    "outline_tree": ['[paths(objects and .title == "section 1.0.0.0.0")]', '.. | objects | select(.title == "'],
    "event_lines": ['select(.uuid == "6f1c'],
}


@pytest.mark.parametrize("mode", ["auto"])
async def test_every_example_of_the_corpus_runs_through_the_query_tool(
    server: OffloadServer, services: Services, mode: str
) -> None:
    async with Client(server, mode=mode) as client:
        for name, content in CORPUS.items():
            r = await client.call_tool("offload", {"content": content, "name": name})
            assert not r.is_error, text_of(r)
            ref = result_of(r)
            assert services.tokens.count(text_of(r)) <= services.settings.preview_tokens, name
            paths = ref["shape"]["jq_paths"]
            for wanted in EXPECTED[name]:
                assert any(p.startswith(wanted) for p in paths), (name, wanted, paths)
            for path in paths:
                assert f"  {path}" in ref["preview"]
                q = await client.call_tool("query_large_output", {"handle": ref["handle"], "query": path})
                assert not q.is_error, (name, path, text_of(q))
                result = result_of(q)["result"].strip()
                assert result_of(q)["results"] >= 1 and result, (name, path)
                assert result not in ("null", "[]"), (name, path, result)


async def test_tree_lookup_finds_the_node_and_its_place(server: OffloadServer) -> None:
    async with Client(server) as client:
        content = CORPUS["directory_tree"]
        ref = result_of(await client.call_tool("offload", {"content": content}))
        where = next(p for p in ref["shape"]["jq_paths"] if p.startswith("[paths("))
        q = await client.call_tool("query_large_output", {"handle": ref["handle"], "query": where})
        found = json.loads(result_of(q)["result"])
        doc = json.loads(content)
        name = where.split('== "')[1].split('"')[0]
        assert found and all(_get(doc, path)["name"] == name for path in found)
        assert all("children" in path for path in found) and max(len(p) for p in found) >= 5  # a deep node


def _get(doc: Any, path: list[Any]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def test_id_field_must_be_distinct_and_present_in_every_record() -> None:
    assert pick_id_field([{"id": 1}, {"id": 2}, {"id": 3}]) == ("id", 2)
    assert pick_id_field([{"id": 1}, {"id": 1}, {"name": "a"}]) is None
    assert pick_id_field([{"id": 1}, {"id": 2}, {"x": 3}]) is None  # missing in one record
    assert pick_id_field([{"id": 1.5}, {"id": 2.5}]) is None  # floats do not compare reliably
    assert pick_id_field([{"id": True}, {"id": False}]) is None
    assert pick_id_field([{"id": 2**60}, {"id": 1}]) is None  # beyond a double's exact integers
    assert pick_id_field([{"id": 1, "a": 1}, {"id": 1, "name": "x"}]) is None
    assert pick_id_field([{"status": "a", "orderId": "o1"}, {"status": "a", "orderId": "o2"}]) == ("orderId", "o2")
    assert pick_id_field([{"id": "\ud800"}, {"id": "b"}]) is None  # jq cannot spell a lone surrogate
    assert id_select("", [{"a-id": 1}, {"a-id": 2}]) == 'select(.["a-id"] == 2)'
    assert id_select(".x[]", [{"k": 1}]) is None  # one record: nothing to pick from


def test_tree_needs_two_levels_of_named_nodes() -> None:
    flat = [{"name": "a", "children": [{"name": "b"}]}]
    assert tree_examples(flat) == []
    assert tree_examples({"items": [{"id": 1}, {"id": 2}]}) == []
    deep = {"name": "r", "children": [{"name": "a", "children": [{"name": "plan.md"}]}, {"name": "z"}]}
    assert tree_examples(deep) == [
        '[paths(objects and .name == "plan.md")]',
        '.. | objects | select(.name == "plan.md")',
    ]


NAMES = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=6) | st.sampled_from(["a", "plan.md"])
TREES = st.recursive(
    st.fixed_dictionaries({"name": NAMES}, optional={"size": st.integers(0, 9)}),
    lambda kids: st.fixed_dictionaries({"name": NAMES, "children": st.lists(kids, max_size=4)}),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(roots=st.lists(TREES, min_size=1, max_size=4), ids=st.booleans())
def test_random_trees_and_records_examples_run(roots: list[dict[str, Any]], ids: bool) -> None:
    doc: Any = [{**r, "id": i} for i, r in enumerate(roots)] if ids else {"tree": roots}
    text = json.dumps(doc, ensure_ascii=False)
    preview = preview_of(text, count_tokens=len4)
    assert preview.tokens <= 500
    assert_paths_work(preview.data["jq_paths"], text)
    lookups = tree_examples(doc)
    for program in lookups:  # shown or not (the budget decides), they answer
        assert run_jq(program, text) not in ([], [[]])
