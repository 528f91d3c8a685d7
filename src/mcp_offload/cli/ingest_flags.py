"""`--ingest-workers-at`, shared by the two commands that serve many clients (serve over HTTP, gateway): its
setting is `ingest_workers_at` (env MCP_OFFLOAD_INGEST_WORKERS_AT); a flag left out keeps the environment's value."""

from __future__ import annotations

import argparse

from mcp_offload.settings import INGEST_WORKERS_AT


def add_ingest_workers_at_flag(parser: argparse._ActionsContainer) -> None:  # a parser or one of its groups
    parser.add_argument(
        "--ingest-workers-at",
        choices=INGEST_WORKERS_AT,
        default=None,
        help="when the ingest worker processes start: at launch (default: a shared server, where no client's first "
        "big output is prepared in the serving process) or at the first big output (a server of one client, as "
        "`wrap` starts its gateway; env MCP_OFFLOAD_INGEST_WORKERS_AT). A stdio server starts them at its first big "
        "output",
    )
