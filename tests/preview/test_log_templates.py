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
