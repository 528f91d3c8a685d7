"""units.py: durations and sizes as people write them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.units import check_url_port, format_duration, format_size, parse_duration, parse_port, parse_size


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("15m", 900), ("15min", 900), ("2h", 7200), ("3d", 259200), ("1w", 604800),
     ("1.5h", 5400), ("500ms", 0.5), (" 3D ", 259200), (".5s", 0.5)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "size"),
    [("512", 512), ("512B", 512), ("64KB", 64_000), ("64KiB", 65_536), ("64k", 65_536), ("1MiB", 1024**2),
     ("1MB", 10**6), ("1GiB", 1024**3), ("4G", 4 * 1024**3), ("1.5GiB", 1536 * 1024**2), ("2TiB", 2 * 1024**4),
     ("1 gib", 1024**3)],
)  # fmt: skip
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "ten", "3 days", "-1s", "1y", "s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration like 90s, 15m, 2h, 3d"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["", "1 gigabyte", "GiB", "-5", "1ib", "1PB", "1e3"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size like 512, 64KB, 1MiB, 1GiB"):
        parse_size(text)


@given(st.integers(0, 2**40))
def test_sizes_round_trip(size: int) -> None:
    assert parse_size(format_size(size)) == size


@given(st.integers(0, 10**8))
def test_durations_round_trip(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


@pytest.mark.parametrize(("text", "port"), [("1", 1), ("8765", 8765), ("65535", 65535), (" 80 ", 80)])
def test_ports_in_range(text: str, port: int) -> None:
    assert parse_port(text) == port


@pytest.mark.parametrize("text", ["0", "65536", "70000", "-1", "+80", "8_0", "80.0", "", "٨٠", "http"])
def test_ports_out_of_range_or_not_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"port|not a port"):
        parse_port(text)


@pytest.mark.parametrize("url", ["http://h:70000", "https://u:p@h:0/x", "http://[::1]:65536/v1", "http://h:x/"])
def test_urls_with_a_port_out_of_range_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="port"):
        check_url_port(url)


@pytest.mark.parametrize("url", ["http://h", "https://h:443/v1", "http://[::1]:8080/", "http://u:p@h/"])
def test_urls_without_a_port_or_in_range_pass(url: str) -> None:
    check_url_port(url)
