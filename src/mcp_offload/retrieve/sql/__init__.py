"""SQL over tabular outputs (CSV/TSV, JSON Lines, JSON arrays of records) with DuckDB, in a sandboxed worker.

- `detect.py` tells SQL from jq in `query_large_output`'s `query` (SELECT/WITH/FROM/... start SQL);
- `worker/` is the process that runs DuckDB (stdlib + duckdb only, nothing of the server);
- `runner.py` starts it, sends it one query at a time, enforces the deadline and formats nothing: the worker
  returns the compact text (CSV with a header) already cut at the output cap.
"""
