"""preview/log.py on the line formats of common servers: detected as a log, levels and time span read right."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.preview import build_preview
from mcp_offload.store.content_index import ContentIndex
from support.preview import len4


def _journal() -> str:  # journalctl's default (short) output
    lines = []
    for i in range(40):
        unit = "sshd[812]" if i % 3 else "systemd[1]"
        msg = (
            "Started Session 4 of User root."
            if unit.startswith("systemd")
            else f"Accepted publickey for root port {50000 + i}"
        )
        lines.append(f"Nov 24 20:{i // 60:02d}:{i % 60:02d} host {unit}: {msg}")
    lines.append(
        "Nov 24 20:00:41 host kernel: EXT4-fs error (device sda1): ext4_find_entry: reading directory lblock 0"
    )
    return "\n".join(lines) + "\n"


def _nginx_error() -> str:
    rows = [f"2026/11/24 20:00:{i:02d} [notice] 7#7: *{i} signal process started" for i in range(30)]
    rows.insert(12, "2026/11/24 20:00:12 [error] 7#7: *12 connect() failed (111: Connection refused) while connecting")
    return "\n".join(rows) + "\n"


def _python_logging() -> str:
    rows = [f"2026-11-24 20:00:{i:02d},{i * 7:03d} INFO app.db: query {i} ok in {i * 3} ms" for i in range(50)]
    rows[20] = "2026-11-24 20:00:20,140 WARNING app.db: slow query 20 took 900 ms"
    rows[33] = "2026-11-24 20:00:33,231 ERROR app.api: payment service timed out after 30s"
    return "\n".join(rows) + "\n"


def _structured() -> str:  # logfmt: level=... key=value
    rows = [f'time=2026-11-24T20:00:{i:02d}Z level=info msg="request served" path=/items/{i}' for i in range(30)]
    rows[7] = 'time=2026-11-24T20:00:07Z level=error msg="upstream timeout" path=/pay'
    return "\n".join(rows) + "\n"


CASES = [
    ("journal", _journal(), {}, ("Nov 24 20:00:00", "Nov 24 20:00:41")),
    ("nginx error log", _nginx_error(), {"NOTICE": 30, "ERROR": 1}, ("2026/11/24 20:00:00", "2026/11/24 20:00:29")),
    ("python logging", _python_logging(), {"INFO": 48, "WARNING": 1, "ERROR": 1}, None),
    ("logfmt", _structured(), {"INFO": 29, "ERROR": 1}, ("2026-11-24T20:00:00Z", "2026-11-24T20:00:29Z")),
]


@pytest.mark.parametrize(("name", "text", "levels", "span"), CASES, ids=[c[0] for c in CASES])
def test_server_log_formats(name: str, text: str, levels: dict[str, int], span: tuple[str, str] | None) -> None:
    preview = build_preview(text, "text", budget_tokens=420, count_tokens=len4)
    assert preview.data["type"] == "log", preview.text
    assert preview.data["levels"] == levels
    if span:
        assert preview.data["time_span"] == list(span)
    if "ERROR" in levels:
        line = preview.data["first_error"]["line"]
        assert "error" in text.split("\n")[line - 1].lower()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([2_000, 60_000, 300_000]), st.booleans())
def test_a_logs_preview_is_the_same_with_the_content_index_line_numbers(seed: int, size: int, accents: bool) -> None:
    """Stored outputs hand the preview their content index's newline counts (no count of the text's newlines of its
    own): the preview is byte for byte the one counting them gives (line numbers of templates and errors included),
    on sampled logs, non-ASCII ones and ones without a final newline."""
    rng = random.Random(seed)
    lines, total, i = [], 0, 0
    while total < size:
        word = rng.choice(["ok", "miss", "héllo", "ünï"] if accents else ["ok", "miss", "hit", "x"])
        level = rng.choice(["INFO", "INFO", "WARN", "ERROR"])
        phase = total * 10 // size  # a message of its own length each tenth: first seen all along the log
        message = " ".join([word] * (phase + 1))
        line = f"2026-11-21T10:{i % 60:02d}:00Z {level} api: {message} id={rng.randint(0, 9)}"
        if rng.random() < 0.05:
            line = ""
        lines.append(line)
        total += len(line) + 1
        i += 1
    text = "\n".join(lines) + rng.choice(["", "\n"])
    data = text.encode()
    index = ContentIndex.build(data)
    counted = build_preview(text, "text", budget_tokens=400, count_tokens=len4, total_lines=index.lines)
    indexed = build_preview(
        text,
        "text",
        budget_tokens=400,
        count_tokens=len4,
        total_lines=index.lines,
        newlines_before=lambda pos: index.newlines_before_char(data, pos),
    )
    assert counted.data.get("type") == "log"
    assert (indexed.text, indexed.data) == (counted.text, counted.data)
