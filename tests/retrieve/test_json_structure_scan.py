"""The structure index's two byte scans against plain reference loops: which quotes delimit strings (a quote after
an odd run of backslashes is escaped, including runs longer than the step-back loop follows) and where the
structural characters are. The paths built on them are checked end to end in test_json_search.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.retrieve.json_structure import _string_quotes, _structural


def _quotes_by_loop(data: bytes) -> list[int]:
    found, backslashes = [], 0
    for i, byte in enumerate(data):
        if byte == 0x22 and backslashes % 2 == 0:
            found.append(i)
        backslashes = backslashes + 1 if byte == 0x5C else 0
    return found


def _scan(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b'"', b"\\", b"\\\\", b"\\" * 33, b"\\" * 40, b"a", b"{", b"]", b","]), max_size=60))
def test_string_quotes_are_those_after_an_even_backslash_run(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert _string_quotes(_scan(data)).tolist() == _quotes_by_loop(data)


@pytest.mark.parametrize("run", [0, 1, 2, 31, 32, 33, 34, 100, 101])  # the step-back loop follows 32
def test_a_long_backslash_run_is_measured_whole(run: int) -> None:
    data = b'{"k": "' + b"\\" * run + b'"x"}'
    assert _string_quotes(_scan(data)).tolist() == _quotes_by_loop(data)


def test_a_quote_at_the_first_byte_is_a_delimiter() -> None:
    assert _string_quotes(_scan(b'"\\"" ')).tolist() == [0, 3]


def test_structural_bytes_are_exactly_brackets_braces_and_commas() -> None:
    every_byte = bytes(range(256)) * 2
    expected = [i for i, byte in enumerate(every_byte) if byte in b"[]{},"]
    assert _structural(_scan(every_byte)).tolist() == expected
