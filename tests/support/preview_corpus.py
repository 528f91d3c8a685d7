"""Real outputs for the previews by kind, generated here by real tools; nothing big is committed.

- logs: redis-server's own log (verbose), uvicorn's log of a small app (access lines, a 404, an exception with
  its traceback and the 500 it caused), both written by the real servers;
- diffs: `git diff` and `git log -p` of this repository;
- tables: the installed distributions (importlib.metadata) as CSV and TSV, with quoted fields; numpy's own test
  data CSV;
- code: source files shipped by installed packages (the stdlib's typing.py, import-linter's explorer.js, numpy's
  C header and C++ source);
- Markdown: openai's api.md; HTML: that page rendered by markdown-it-py, and a pydoc page (no headings).

Each generator returns (name, text); `corpus()` is the whole set, built once per process, and only when a test
first asks for a text (`corpus_text`): tests are parametrized by `KINDS`, known without building anything, so that
collecting them (every pytest-xdist worker collects every test) starts no redis-server and no uvicorn.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.metadata
import importlib.util
import inspect
import io
import os
import pydoc
import shutil
import subprocess
import sys
import tempfile
import time
import typing
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path

from support import HANG_TIMEOUT_S, free_port

REPO = Path(__file__).resolve().parents[2]


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    return Path(spec.origin).parent.joinpath(*parts)


def redis_log(workdir: Path) -> str:
    """redis-server at loglevel verbose: startup, 40 client connections, a CONFIG SET warning, shutdown."""
    server = shutil.which("redis-server")
    assert server, "redis-server is needed (.ci/run installs it)"
    sock, logfile = workdir / "redis.sock", workdir / "redis.log"
    args = ["--port", "0", "--unixsocket", str(sock), "--loglevel", "verbose", "--logfile", str(logfile)]
    proc = subprocess.Popen([server, *args, "--save", "", "--appendonly", "no", "--dir", str(workdir)])
    try:
        import redis

        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for i in range(40):
            client = redis.Redis(unix_socket_path=str(sock))
            client.set(f"k{i}", "v" * i)
            client.close()
        client = redis.Redis(unix_socket_path=str(sock))
        client.config_set("maxmemory", "1")
        client.config_set("maxmemory", "0")
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(nosave=True)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return logfile.read_text()


_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path == "/boom":
        raise RuntimeError("payment service timed out after 30s")
    status = 404 if path.startswith("/missing") else 200
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})
"""


def uvicorn_log(workdir: Path) -> str:
    """uvicorn serving a small ASGI app: startup lines, 120 access lines, 404s, two exceptions with tracebacks."""
    (workdir / "corpus_app.py").write_text(_APP)
    port = free_port()
    out = workdir / "uvicorn.log"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "corpus_app:app", "--port", str(port), "--no-use-colors"],
            cwd=workdir,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(workdir)},
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + HANG_TIMEOUT_S
            while not _get(base + "/health"):
                assert time.monotonic() < deadline, "uvicorn did not start"
                time.sleep(0.1)
            for i in range(120):
                path = "/boom" if i in (50, 97) else f"/missing/{i}" if i % 9 == 0 else f"/items/{i}"
                assert _get(base + path)
        finally:
            proc.terminate()
            proc.wait(10)
    return out.read_text()


def _get(url: str) -> bool:
    """GET `url`; True once the server answered (any status)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout


def git_outputs() -> list[tuple[str, str]]:
    commits = int(_git("rev-list", "--count", "HEAD").strip())
    back = min(commits - 1, 12)
    diff = _git("diff", "--no-color", f"HEAD~{back}", "HEAD") if back else _git("show", "--no-color", "HEAD")
    return [("git diff", diff), ("git log -p", _git("log", "-p", "--no-color", f"-{min(commits, 6)}"))]


def packages_table(delimiter: str) -> str:
    """The installed distributions: name, version, installer, files, typed, summary (quoted where needed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(["name", "version", "installer", "files", "typed", "summary"])
    rows: list[list[object]] = []
    for dist in importlib.metadata.distributions():
        files = dist.files or []
        installer = (dist.read_text("INSTALLER") or "unknown").strip()
        typed = any(str(f).endswith("py.typed") for f in files)
        metadata = dist.metadata
        summary = (metadata.get_all("Summary") or [""])[0].replace("\n", " ").replace("\t", " ")
        rows.append([metadata["Name"], dist.version, installer, len(files), str(typed).lower(), summary])
    ordered = sorted(rows, key=lambda row: str(row[0]).lower())
    writer.writerows(ordered)
    return buffer.getvalue()


def source_files() -> list[tuple[str, str]]:
    return [
        ("python: typing.py", inspect.getsource(typing)),
        (
            "javascript: import-linter explorer.js",
            _package_file("importlinter", "ui", "static", "explorer.js").read_text(),
        ),
        ("c: numpy ndarraytypes.h", _package_file("numpy", "_core", "include", "numpy", "ndarraytypes.h").read_text()),
        (
            "cpp: numpy generate_umath_validation_data.cpp",
            _package_file("numpy", "_core", "tests", "data", "generate_umath_validation_data.cpp").read_text(),
        ),
    ]


def markdown_doc() -> str:
    return _package_file("openai", "resources", "responses", "api.md").read_text()


def html_pages() -> list[tuple[str, str]]:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown_doc())
    head = "<!DOCTYPE html>\n<html>\n<head>\n<title>openai responses API</title>\n</head>\n"
    page = f"{head}<body>\n{body}</body>\n</html>\n"
    import json.decoder

    doc = pydoc.HTMLDoc()
    return [
        ("html: markdown-it page", page),
        ("html: pydoc page", doc.page("json.decoder", doc.docmodule(json.decoder))),
    ]


# (expected preview type, name) of every output `corpus()` builds, in its order
KINDS: tuple[tuple[str, str], ...] = (
    ("log", "redis-server log"),
    ("log", "uvicorn log"),
    ("diff", "git diff"),
    ("diff", "git log -p"),
    ("table", "packages.csv"),
    ("table", "packages.tsv"),
    ("table", "numpy pcg64-testset-1.csv"),
    ("code", "python: typing.py"),
    ("code", "javascript: import-linter explorer.js"),
    ("code", "c: numpy ndarraytypes.h"),
    ("code", "cpp: numpy generate_umath_validation_data.cpp"),
    ("markdown", "openai api.md"),
    ("html", "html: markdown-it page"),
    ("html", "html: pydoc page"),
)


def corpus_text(name: str) -> str:
    """The text of the output named `name` in `KINDS` (the whole corpus is built on the first call)."""
    return next(text for _, n, text in corpus() if n == name)


@cache
def corpus() -> tuple[tuple[str, str, str], ...]:
    """(expected preview type, name, text) for every real output."""
    workdir = Path(tempfile.mkdtemp(prefix="preview-corpus-"))
    try:
        items: list[tuple[str, str, str]] = [
            ("log", "redis-server log", redis_log(workdir)),
            ("log", "uvicorn log", uvicorn_log(workdir)),
        ]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    items += [("diff", name, text) for name, text in git_outputs()]
    items += [("table", "packages.csv", packages_table(",")), ("table", "packages.tsv", packages_table("\t"))]
    numbers = _package_file("numpy", "random", "tests", "data", "pcg64-testset-1.csv")
    items.append(("table", "numpy pcg64-testset-1.csv", numbers.read_text()))
    items += [("code", name, text) for name, text in source_files()]
    items.append(("markdown", "openai api.md", markdown_doc()))
    items += [("html", name, text) for name, text in html_pages()]
    assert tuple((kind, name) for kind, name, _ in items) == KINDS, "KINDS must list what corpus() builds"
    return tuple(items)
