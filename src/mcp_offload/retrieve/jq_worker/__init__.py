"""The jq worker process: runs one jq program at a time over one stored output, inside a sandbox.

Why a separate process: jq is Turing-complete, so a program may loop forever, print forever or allocate until the
machine swaps. A process can be killed at a deadline and capped with `RLIMIT_AS`; a thread cannot. The pool
(`retrieve.jq_process`) starts it as `python -I -S -c <bootstrap> <dir> <libjq> <parent pid> <fd>`, where the
bootstrap puts `<dir>` (the directory holding this package) on `sys.path` and calls `jq_worker.main.main`: the
package is imported as the top-level `jq_worker`, never as part of `mcp_offload`. It runs with an empty
environment, /dev/null on stdin/stdout/stderr (stdout is the MCP wire in the server: nothing of ours may reach it)
and one end of a UNIX socket pair. Every module here is stdlib-only and imports its siblings relatively, so the
worker never imports the server package and starts in a few milliseconds; the pool imports `protocol` (as
`mcp_offload.retrieve.jq_worker.protocol`), so both sides share one definition of the wire. This file stays empty
of code for the same reason.

Why libjq through ctypes instead of jq.py's Python API: jq.py (the PyPI `jq` package) bundles libjq (1.8.2 in
jq 1.13) and exports its C API from its extension module. Driving that API the way jq's own `main.c` does gives
the CLI's exact semantics, which jq.py's iterator does not offer: `input`/`inputs` read the following values of a
JSON Lines output, results are printed by jq's own printer (`jv_dump_string` with the CLI's flags, so `-c`, `-r`
and the 2-space pretty form are byte-identical to `jq` 1.8.2), `halt`/`halt_error` behave as in the CLI, and we
can set an empty library search path. The input is never copied: the stored file's descriptor arrives over the
socket (`SCM_RIGHTS`) and is mmapped; bytes from a non-file store arrive on the socket.

Parsed inputs are cached: parsing is most of a query's cost (libjq 1.8 parses ~15-20 MB/s) and models run several
queries in a row on one output while refining a filter. The server names each input by a key (handle, size,
creation time, kind: stored outputs never change) and the worker keeps the parsed values of its last few inputs
(`cache.InputCache`, LRU, bounded by count, source bytes and heap bytes). A run gets its own reference (`jv_copy`)
and jq values are copy-on-write, so a program that "modifies" its input (`.a = 1`) copies what it changes and the
cached value stays as parsed. The cache counts against the memory cap: a query gets the same total budget with
or without it (see `main.handle`), and the server retries once without the cache when a query runs out of memory.
A parsed input too big to keep is freed after the reply is sent (`main.after_reply`): freeing it takes about as
long as the program ran on it (~1 s per 100 MB of JSON), and the model need not wait for that.
Programs that read the input stream themselves (`input`, `inputs`, `input_line_number`, `input_filename`) run on
the stream as before, except over a single-value input, where the stream has nothing left to give anyway.

Sandbox, in layers (`sandbox`):
- files: `jq_program.check_program` rejects import/include (the only way a program names a file); Landlock (Linux
  >= 5.13, best effort) then forbids opening any file at all after start-up, so even a missed directive reads
  nothing; no input file names (`input_filename` is null), JQ_LIBRARY_PATH=[] (`modulemeta` finds nothing), and the
  cwd is a directory deleted right after `chdir`;
- environment: empty (`$ENV`/`env` are `{}`);
- resources: RLIMIT_AS per request (memory cap), RLIMIT_CORE=0, RLIMIT_FSIZE=0; the server enforces the deadline;
- lifetime: PR_SET_PDEATHSIG and a getppid watchdog, so a worker never outlives the server; EOF ends it when idle.

Modules: `protocol` (the wire, shared with the pool), `libjq` (the ctypes binding), `libc` (mmap and heap
accounting), `cache` (parsed inputs), `engine` (compile, run, print), `sandbox`, `main` (the request loop).
Nothing may be imported lazily: after start-up Landlock forbids opening files, module files included.
"""
