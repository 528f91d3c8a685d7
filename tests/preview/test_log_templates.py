"""preview/log_templates.py: Drain's clustering recovers planted templates with exact counts and first lines."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.preview.log_templates import WILDCARD, TemplateMiner

TEMPLATES = [
    "Accepted connection from {ip}:{port}",
    "Client closed connection id={n} addr={ip}:{port} fd={n}",
    "DB query took {n} ms on shard {n}",
    "worker {n} restarted after {n} failures",
    "Cache miss for key user:{n}",
]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        ip=f"10.0.{rng.randint(0, 255)}.{rng.randint(0, 255)}", port=rng.randint(1024, 65535), n=rng.randint(0, 10**6)
    )


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, len(TEMPLATES) - 1), min_size=1, max_size=300), st.integers(0, 2**16))
def test_planted_templates_come_back_with_exact_counts_and_first_lines(picks: list[int], seed: int) -> None:
    rng = random.Random(seed)
    miner = TemplateMiner()
    for number, pick in enumerate(picks, 1):
        miner.add(_fill(TEMPLATES[pick], rng), number)
    mined = {t.text: (t.count, t.first_line) for t in miner.templates()}
    expected = {}
    for pick in sorted(set(picks)):
        text = " ".join(WILDCARD if any(c in tok for c in "{") else tok for tok in TEMPLATES[pick].split())
        expected[text] = (picks.count(pick), picks.index(pick) + 1)
    assert mined == expected


def test_lines_of_random_words_stay_bounded() -> None:
    rng = random.Random(1)
    words = [f"w{i}x" for i in range(50)]
    miner = TemplateMiner()
    for number in range(5_000):
        miner.add("INFO api: " + " ".join(rng.choices(words, k=12)), number + 1)
    templates = miner.templates()
    assert len(templates) <= 16  # one leaf (same length, same first token): capped
    assert miner.unmatched + sum(t.count for t in templates) == 5_000


def _reference_best(templates: list[list[str]], params: list[int], masked: list[str]) -> tuple[int, float] | None:
    """Drain's choice as written in the paper's loop: each template in turn, ties to more parameters, then earlier."""
    best, best_sim, best_params = None, -1.0, -1
    for j, tokens in enumerate(templates):
        sim = sum(a == b for a, b in zip(tokens, masked, strict=True)) / len(masked)
        if sim > best_sim or (sim == best_sim and params[j] > best_params):
            best, best_sim, best_params = j, sim, params[j]
    return None if best is None else (best, best_sim)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "d1", "e"]), min_size=4, max_size=4), min_size=1, max_size=400),
    st.integers(1, 16),
)
def test_the_position_index_picks_the_template_a_comparison_with_each_picks(lines: list[list[str]], cap: int) -> None:
    """The miner counts a line's equal tokens per template through its per-position index (lookups, not a comparison
    with every template of the leaf): every line joins the template (or none) that comparing with each would pick,
    merges included, so the mined templates are Drain's exactly."""
    miner = TemplateMiner(max_per_leaf=cap)
    for number, tokens in enumerate(lines, 1):
        masked = [WILDCARD if any(ch.isdigit() for ch in t) else t for t in tokens]
        leaf = miner._leaf(masked)
        before = [list(t.tokens) for t in leaf.templates]
        expected = _reference_best(before, [t.params for t in leaf.templates], masked)
        joined = miner.add(" ".join(tokens), number)
        if expected is not None and expected[1] >= 0.4:
            assert joined is leaf.templates[expected[0]]
        elif len(before) < cap:
            assert joined is leaf.templates[-1] and joined.count == 1  # a new template
        else:
            assert joined is None
    assert miner.unmatched + sum(t.count for t in miner.templates()) == len(lines)


def test_a_tie_goes_to_more_parameters_then_to_the_earlier_template() -> None:
    miner = TemplateMiner()
    first = miner.add("a b c e", 1)
    second = miner.add("a c e b", 2)  # 1 of 4 tokens equal: a template of its own
    assert first is not None and second is not None and first is not second
    assert miner.add("a b e x", 3) is first  # 2 of 4 equal to each: the earlier one
    assert first.tokens == ["a", "b", WILDCARD, WILDCARD] and first.params == 2
    third = miner.add("a x y z", 4)
    assert third is not None and third is not first and third is not second
    # 2 of 4 equal to `second` ("a", "e") and to `first` ("a", "b"): `first` has more parameters now
    assert miner.add("a b e q", 5) is first
