"""The SQL worker process: DuckDB behind a pipe, stdlib + duckdb only (it imports nothing of the server)."""
