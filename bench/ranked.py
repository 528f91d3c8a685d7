"""Ranked search: which engine, by measurement, and what ours does on a session's outputs.

Engines compared on the same passages (`retrieve/ranked/passages.py`, ~1 KB at line ends) of the same seeded
outputs: SQLite FTS5 (stdlib; ours, `retrieve/ranked/fts_index.py`), `tantivy` (Rust, in-RAM index, `en_stem`
tokenizer, 2 writer threads) and `bm25s` (numpy/scipy, English stop words). Rows:
- build: MB/s indexing one session's outputs (`--ranked-size` in all, in 10 outputs; FTS5 builds: median of
  `--repeat` rounds taken in turns), each engine; ours as shipped (shards built side by side) and on one thread,
  next to the yardstick of the same run: a bare FTS5 table with SQLite's defaults (`unicode61`, text stored) fed the
  same passages with one `executemany` (ratio: ours / it, in time; the note gives MB/s and the speed-up), and the
  same table with only our (Porter stemming) tokenizer, which the first does not pay for;
- offload: median latency of offloading each output with the background index build on and off, and MB/s from the
  first offload to every index ready;
- query: median ms of a question over the whole session (warm indexes): ours through the in-process API (index
  lookup, BM25 re-scoring across outputs, best lines, jq paths), the engines' own top-k calls as yardsticks; the
  first question after the background builds, after a restart (indexes loaded from their sidecars) and with no
  index anywhere (built by that question);
- relevance: share of the relevance set (tests/data/ranked, real outputs) answered in the top 3, each engine over
  the same passages (within the answer's output), and ours across the session too.
The outputs are generated, seeded, from the word frequencies of the relevance corpora (a Zipf-like real vocabulary)
shaped as log lines and prose, so document counts look like real text.
"""

from __future__ import annotations

import asyncio
import gzip
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from mcp_offload.core import outputs as core_outputs  # noqa: E402
from mcp_offload.core.services import build_services  # noqa: E402
from mcp_offload.retrieve.ranked import index_cache  # noqa: E402
from mcp_offload.retrieve.ranked.fts_index import BUILDERS, build_index  # noqa: E402
from mcp_offload.retrieve.ranked.index_cache import INDEXES  # noqa: E402
from mcp_offload.retrieve.ranked.passages import passage_bounds  # noqa: E402
from mcp_offload.retrieve.ranked.terms import TOKENIZER  # noqa: E402
from mcp_offload.settings import Settings  # noqa: E402
from support.ranked_relevance import DATA, Passage, corpora, load_cases, score  # noqa: E402

OUTPUTS = 10
QUESTIONS = [
    "where is the timeout about the payment service?",
    "which package failed to configure because of a dependency error",
    "connection refused while fetching the repository index",
    "error processing package configuration script",
    "how does the stream reader enforce its buffer limit",
    "certificate authority bundle update",
]


def parse_size(text: str) -> int:
    units = {"K": 1000, "M": 1000**2, "G": 1000**3}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def vocabulary() -> tuple[list[str], list[int]]:
    counts: Counter[str] = Counter()
    for path in sorted(DATA.glob("*.gz")):
        counts.update(re.findall(r"[A-Za-z][A-Za-z0-9_]{1,20}", gzip.decompress(path.read_bytes()).decode()))
    words = [w for w, _ in counts.most_common(40_000)]
    return words, [counts[w] for w in words]


def make_output(size: int, rng: random.Random, words: list[str], weights: list[int], n: int) -> str:
    """About `size` bytes of log lines (60 %) and prose lines, words drawn by their real frequencies (numpy: the
    100 MB session is generated in seconds)."""
    gen = np.random.default_rng(rng.randrange(2**32))
    vocab = np.array(words, dtype=object)
    p = np.array(weights, dtype=np.float64)
    drawn = vocab[gen.choice(len(vocab), size=size // 6, p=p / p.sum())]
    levels = np.array(["INFO", "WARN", "ERROR", "DEBUG"], dtype=object)
    services = np.array(["payment", "search", "billing", "auth", "catalog", "inventory"], dtype=object)
    estimate = len(drawn) // 15 + 1
    counts = gen.integers(6, 24, size=estimate)
    ends = np.minimum(np.cumsum(counts), len(drawn))
    is_log = gen.random(estimate) < 0.6
    level = levels[gen.choice(4, size=estimate, p=[0.8, 0.08, 0.04, 0.08])]
    service = services[gen.integers(0, 6, size=estimate)]
    clock = gen.integers(0, 3600, size=estimate)
    lines: list[str] = []
    total = start = 0
    for i in range(estimate):
        if total >= size or start >= len(drawn):
            break
        body = " ".join(drawn[start : ends[i]])
        start = int(ends[i])
        if is_log[i]:
            minute, second = divmod(int(clock[i]), 60)
            body = f"2026-03-{n + 1:02d} 10:{minute:02d}:{second:02d} {level[i]} {service[i]}: {body}"
        lines.append(body)
        total += len(body) + 1
    return "\n".join(lines) + "\n"


def median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


# -- the yardstick engines over the same passages --------------------------------------------------------------------


def _passages(text: bytes) -> list[str]:
    b = passage_bounds(text)
    return [text[int(b[i]) : int(b[i + 1])].decode("utf-8", "replace") for i in range(len(b) - 1)]


class Tantivy:
    def __init__(self, passages: list[str]) -> None:
        import tantivy

        self.tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        builder.add_integer_field("id", stored=True, indexed=False)
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema)
        writer = self.index.writer(heap_size=256_000_000, num_threads=2)
        for i, text in enumerate(passages):
            writer.add_document(tantivy.Document(body=text, id=i))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def top(self, question: str, k: int) -> list[int]:
        words = [w.lower() for w in re.findall(r"[^\W_]+", question)]
        # the question's words, stemmed by the index's own tokenizer, as SHOULD clauses (no query syntax)
        query = self.index.parse_query(" ".join(f'"{w}"' for w in words), ["body"]) if words else None
        if query is None:
            return []
        hits = self.searcher.search(query, k).hits
        return [int(self.searcher.doc(address)["id"][0]) for _, address in hits]


class Bm25s:
    def __init__(self, passages: list[str]) -> None:
        import bm25s

        self.bm25s = bm25s
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(passages, stopwords="en", show_progress=False), show_progress=False)
        self.count = len(passages)

    def top(self, question: str, k: int) -> list[int]:
        tokens = self.bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self.retriever.retrieve(tokens, k=min(k, self.count), show_progress=False)
        return [int(d) for d in docs[0]]


class Fts5:
    def __init__(self, text: bytes, builders: int | None = None) -> None:
        self.index = build_index(text, builders=builders)

    def top(self, question: str, k: int) -> list[int]:
        from mcp_offload.retrieve.ranked.terms import query_terms

        return [h.passage for h in self.index.top(query_terms(question).match(), k)]


class BareFts5:
    """The yardstick: an FTS5 table with SQLite's defaults (or only our tokenizer), the same passages inserted with
    one executemany."""

    def __init__(self, text: bytes, tokenize: str | None = None) -> None:
        import sqlite3

        b = passage_bounds(text).tolist()
        view = memoryview(text)
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE p USING fts5(body" + (f", tokenize='{tokenize}')" if tokenize else ")"))
        rows = ((str(view[b[i] : b[i + 1]], "utf-8", "replace"),) for i in range(len(b) - 1))
        db.executemany("INSERT INTO p(body) VALUES (?)", rows)
        db.commit()
        db.close()
        view.release()


# -- rows -------------------------------------------------------------------------------------------------------------


def row(
    case: str, size: str, ours: float, yard: str | None = None, yard_ms: float | None = None, **extra: Any
) -> dict[str, Any]:
    r: dict[str, Any] = {"suite": "ranked", "case": case, "size": size, "ours_ms": round(ours, 3)}
    if yard and yard_ms:
        r.update(yardstick=yard, yardstick_ms=round(yard_ms, 3), ratio=round(ours / yard_ms, 2))
    r.update(extra)
    return r


STEMMED = "bare FTS5, our tokenizer"
SHOWN = {
    "bare FTS5": "bare FTS5 (yardstick: SQLite's defaults, text stored)",
    STEMMED: f"bare FTS5, defaults but tokenize='{TOKENIZER}' (yardstick 2)",
    "fts5": f"fts5, ours: {BUILDERS} threads (a question's build, when a core is idle)",
    "fts5 one thread": "fts5, ours: 1 thread (the background build at offload)",
}


def bench_engines(outputs: list[bytes], label: str, repeat: int) -> list[dict[str, Any]]:
    mb = sum(len(o) for o in outputs) / 1e6
    rows = []
    built: dict[str, list[Any]] = {}
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    yard = "bare FTS5"
    builds = (
        (yard, lambda o: BareFts5(o)),
        (STEMMED, lambda o: BareFts5(o, TOKENIZER)),
        ("fts5", lambda o: Fts5(o, builders=BUILDERS)),
        ("fts5 one thread", lambda o: Fts5(o, builders=1)),
        ("tantivy", lambda o: Tantivy(_passages(o))),
        ("bm25s", lambda o: Bm25s(_passages(o))),
    )
    rounds: dict[str, list[tuple[float, float]]] = {}
    for turn in range(max(1, repeat)):
        # the FTS5 builds in turns, `repeat` times (a shared machine's load drifts: each gets the same drift), the
        # slower engines once; the median of each
        for name, make in builds:
            if turn and name in ("tantivy", "bm25s"):
                continue
            built.pop(name, None)
            t, c = time.perf_counter(), time.process_time()
            built[name] = [make(o) for o in outputs]
            rounds.setdefault(name, []).append(((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000))
    for name, taken in rounds.items():
        timings[name] = statistics.median(w for w, _ in taken)
        cpu[name] = statistics.median(c for _, c in taken)
    del built[yard], built[STEMMED]
    for name, _ in builds:
        rate = mb / (timings[name] / 1000)
        note = f"{rate:.0f} MB/s wall, {mb / (cpu[name] / 1000):.0f} MB/s CPU"
        if name != yard:
            note += f"; {timings[yard] / timings[name]:.2f}x the yardstick's speed"
        if name.startswith("fts5"):
            note += f", {timings[STEMMED] / timings[name]:.2f}x with our tokenizer's"
        case = "build " + SHOWN.get(name, name)
        rows.append(
            row(case, label, timings[name], yard, timings[yard], note=note, mb_s=round(rate, 1), cpu_ms=cpu[name])
        )
    del built["fts5 one thread"]
    for name in ("fts5", "tantivy", "bm25s"):
        engines = built[name]
        per_q = [median_ms(lambda q=q, e=engines: [x.top(q, 20) for x in e], repeat) for q in QUESTIONS]
        ms = statistics.median(per_q)
        rows.append(
            row(f"query {name} (engine top-20 x {len(outputs)} outputs)", label, ms, note=f"max {max(per_q):.1f}")
        )
    return rows


async def _offload_all(services: Any, scope: Any, outputs: list[str]) -> list[float]:
    """Offload each output; the latency of each offload call (ms)."""
    times = []
    for i, text in enumerate(outputs):
        t = time.perf_counter()
        await core_outputs.offload(services, scope, text, name=f"out{i}")
        times.append((time.perf_counter() - t) * 1000)
    return times


async def _offload_without_builds(services: Any, outputs: list[str], scope: Any = None) -> list[float]:
    warm_min = index_cache.WARM_MIN
    index_cache.WARM_MIN = 1 << 62
    try:
        return await _offload_all(services, scope or core_outputs.SessionScope.new(), outputs)
    finally:
        index_cache.WARM_MIN = warm_min


async def _timed_question(services: Any, scope: Any, question: str) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    await core_outputs.search(services, scope, question, ranked=True)
    return (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000


async def bench_api(outputs: list[str], label: str, repeat: int) -> list[dict[str, Any]]:
    """Ours end to end through the in-process API: offload with and without the background build, the first
    question after it, after a restart (sidecars) and with no index at all, then warm questions."""
    mb = sum(len(o.encode()) for o in outputs) / 1e6
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-offload-ranked-") as tmp:
        services = build_services(Settings(store=tmp))
        try:
            # offload latency with the background build off, on, and off again (the order's drift averaged out):
            # the builds of earlier outputs run while later ones are offloaded, on the same cores
            without = await _offload_without_builds(services, outputs)
            INDEXES.clear()
            scope = core_outputs.SessionScope.new()
            t, c = time.perf_counter(), time.process_time()
            with_build = await _offload_all(services, scope, outputs)
            INDEXES.wait_idle()
            ready, ready_cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            lazy_scope = core_outputs.SessionScope.new()
            without += await _offload_without_builds(services, outputs, lazy_scope)
            builds = INDEXES.builds
            after, after_cpu = await _timed_question(services, scope, QUESTIONS[0])
            rebuilt = INDEXES.builds - builds

            INDEXES.clear()  # a restart: nothing in memory, the sidecars on disk
            loads = INDEXES.loads
            restart, restart_cpu = await _timed_question(services, scope, QUESTIONS[0])
            loaded = INDEXES.loads - loads

            INDEXES.clear()  # outputs offloaded with no background build: the question builds every index
            builds = INDEXES.builds
            first, first_cpu = await _timed_question(services, lazy_scope, QUESTIONS[0])
            lazy_builds = INDEXES.builds - builds

            await _timed_question(services, scope, QUESTIONS[0])  # back in memory (from the sidecars)
            per_q, per_q_cpu = [], []
            for q in QUESTIONS:
                times, cpu = [], []
                for _ in range(repeat):
                    w, c = await _timed_question(services, scope, q)
                    times.append(w)
                    cpu.append(c)
                per_q.append(statistics.median(times))
                per_q_cpu.append(statistics.median(cpu))
        finally:
            await services.aclose()
    plain, built = statistics.median(without), statistics.median(with_build)
    rows.append(
        row(
            "api offload, background index build on (median call)",
            label,
            built,
            "offload, background build off",
            plain,
            note=f"max {max(with_build):.0f} ms on, {max(without):.0f} ms off (off: before and after on)",
        )
    )
    rows.append(
        row(
            "api offload -> every index built in the background",
            label,
            ready,
            note=f"{mb / (ready / 1000):.0f} MB/s wall, {mb / (ready_cpu / 1000):.0f} MB/s CPU, offloads included",
            cpu_ms=round(ready_cpu, 1),
        )
    )
    rows.append(
        row(
            "api first question after the background builds",
            label,
            after,
            note=f"CPU {after_cpu:.1f} ms; {rebuilt} index(es) built by the question",
            cpu_ms=round(after_cpu, 1),
        )
    )
    rows.append(
        row(
            "api first question after a restart (sidecars loaded)",
            label,
            restart,
            note=f"CPU {restart_cpu:.1f} ms; {loaded} sidecar(s) loaded, {mb / (restart / 1000):.0f} MB/s",
            cpu_ms=round(restart_cpu, 1),
        )
    )
    rows.append(
        row(
            "api first question, no index anywhere (builds them)",
            label,
            first,
            note=f"{mb / (first / 1000):.0f} MB/s wall, {mb / (first_cpu / 1000):.0f} MB/s CPU; {lazy_builds} built",
            cpu_ms=round(first_cpu, 1),
        )
    )
    warm, warm_cpu = statistics.median(per_q), statistics.median(per_q_cpu)
    rows.append(
        row(
            "api question, warm (median of questions)",
            label,
            warm,
            note=f"CPU {warm_cpu:.1f} ms; max {max(per_q):.1f} wall, {max(per_q_cpu):.1f} CPU",
            cpu_ms=round(warm_cpu, 1),
        )
    )
    return rows


async def bench_relevance(filler: list[str], label: str) -> list[dict[str, Any]]:
    """The relevance set: ours across the session (alone, then next to the generated outputs, where the common
    terms of a question are pruned as in a large session) and within each output; each engine alone."""
    cases = load_cases()
    texts = corpora(cases)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcp-offload-ranked-") as tmp:
        services = build_services(Settings(store=tmp))
        scope = core_outputs.SessionScope.new()
        crowded = core_outputs.SessionScope.new()
        try:
            handles = {n: (await core_outputs.offload(services, scope, t, name=n)).handle for n, t in texts.items()}
            crowded_handles = {
                n: (await core_outputs.offload(services, crowded, t, name=n)).handle for n, t in texts.items()
            }
            for i, text in enumerate(filler):
                await core_outputs.offload(services, crowded, text, name=f"filler{i}")

            async def in_crowd(question: str, handle: str | None) -> list[Passage]:
                out = await core_outputs.search(services, crowded, question, handle=handle, ranked=True, max_results=3)
                return [Passage(p.handle, p.start_line, p.end_line) for p in out.passages or []]

            got = await score(cases, texts, crowded_handles, in_crowd, across=True)
            rows.append(
                row(
                    f"relevance ours across the session + {label} of same-vocabulary text",
                    "top-3",
                    got.share * 100,
                    note=f"{got.answered}/{got.asked}",
                )
            )

            async def ours(question: str, handle: str | None) -> list[Passage]:
                out = await core_outputs.search(services, scope, question, handle=handle, ranked=True, max_results=3)
                return [Passage(p.handle, p.start_line, p.end_line) for p in out.passages or []]

            for across in (True, False):
                got = await score(cases, texts, handles, ours, across=across)
                where = "across the session" if across else "within the output"
                rows.append(
                    row(f"relevance ours {where}", "top-3", got.share * 100, note=f"{got.answered}/{got.asked}")
                )
        finally:
            await services.aclose()
    by_handle = {h: n for n, h in handles.items()}
    for name in ("fts5", "tantivy", "bm25s"):
        engines: dict[str, Any] = {}
        lines: dict[str, list[int]] = {}
        for corpus, text in texts.items():
            data = text.encode()
            bounds = passage_bounds(data)
            lines[corpus] = [data[: int(b)].count(b"\n") + 1 for b in bounds]
            if name == "fts5":
                engines[corpus] = Fts5(data)
            elif name == "tantivy":
                engines[corpus] = Tantivy(_passages(data))
            else:
                engines[corpus] = Bm25s(_passages(data))

        async def engine(
            question: str, handle: str | None, engines: Any = engines, lines: Any = lines
        ) -> list[Passage]:
            assert handle is not None
            corpus = by_handle[handle]
            starts = lines[corpus]
            return [Passage(handle, starts[p], starts[p + 1]) for p in engines[corpus].top(question, 3)]

        got = await score(cases, texts, handles, engine, across=False)
        rows.append(
            row(
                f"relevance {name} alone, within the output",
                "top-3",
                got.share * 100,
                note=f"{got.answered}/{got.asked}",
            )
        )
    return rows


def run(args: Any) -> list[dict[str, Any]]:
    size = parse_size(getattr(args, "ranked_size", None) or ("10M" if args.quick else "100M"))
    label = f"{size / 1e6:.0f}MB/{OUTPUTS}"
    rng = random.Random(19)
    words, weights = vocabulary()
    texts = [make_output(size // OUTPUTS, rng, words, weights, n) for n in range(OUTPUTS)]
    rows = bench_engines([t.encode() for t in texts], label, args.repeat)
    rows += asyncio.run(bench_api(texts, label, args.repeat))
    rows += asyncio.run(bench_relevance(texts, label))
    return rows
