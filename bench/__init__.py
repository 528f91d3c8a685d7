"""The benchmarks (`python bench/run.py`), a package so that its modules import each other as `bench.core`, …

Bare names would be ambiguous: tests/ (on sys.path for its `support` and `llm_upstream` helpers) has packages named
`core`, `proxy`, `compact` and `gateway` too, and which one `import core` found depended on the order suites ran in.
"""
