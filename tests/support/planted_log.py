"""An access-log-like text with one planted error line: the ranked-search tests' haystack and needle."""

from __future__ import annotations

PLANTED = "2026-03-02 11:04:17 ERROR payment-gateway: upstream call to the card processor timed out after 30 s"
SERVICES = ("search", "billing", "inventory", "auth", "catalog")


def planted_log(lines: int, planted_at: int, *, tenants: bool = False) -> str:
    """`lines` INFO lines (`tenants`: each names one of 13 tenants, ~65 bytes a line) with `PLANTED` at 1-based
    line `planted_at`."""
    tail = [f" for tenant t{i % 13}" if tenants else "" for i in range(13)]
    out = [
        f"2026-03-02 11:{i // 600 % 60:02d}:{i // 10 % 60:02d} INFO {SERVICES[i % 5]}: GET /api/v1/items/{i} 200 "
        f"in {i % 97} ms{tail[i % 13]}"
        for i in range(lines)
    ]
    out[planted_at - 1] = PLANTED
    return "\n".join(out)
