"""The clouds' sessions of bench/gateway.py (`gateway.py --clouds`): one 40-turn agent session per cloud and API,
each driven by the cloud's real SDK (tests/support/cloud_flows.py: boto3 `converse_stream`, `AnthropicBedrock`,
`AnthropicVertex`, `google-genai` with `vertexai=True`, `AzureOpenAI` chat and responses), run side by side going
direct to the scripted cloud (tests/llm_upstream, which simulates each cloud's prompt cache) and through the real
`mcp-offload gateway` process. The model runs one build step per turn (every other step a ~3,000-token log) and now
and then searches an offloaded output (answered inside the gateway); the session is tests/support/cloud_sessions.py.

Cost is in base-input-token units at the cloud's cache prices (the provider package's `cache_prices`: Claude on
Bedrock and Vertex 1.25x write / 0.1x read, Gemini on Vertex 0.1x read, Azure by the deployment's model: gpt-4o 0.5x,
gpt-5 0.1x), output at 5x; `cost x` is the gateway's over direct. `breaks` counts upstream requests whose prompt
does not extend the one before (the gateway's one break is where it appends its retrieval tools).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "tests"))

from llm_upstream import ReceivedRequest, UpstreamServer  # noqa: E402
from mcp_offload.apis.registry import api_named  # noqa: E402
from mcp_offload.providers.registry import PROVIDERS  # noqa: E402
from support.cloud_flows import flow  # noqa: E402
from support.cloud_sessions import SESSION_FLOWS, run_session, session_cost, session_script  # noqa: E402
from support.gateway_process import gateway_process  # noqa: E402

GATEWAY_AWS = {  # the gateway's own AWS identity (the scripted Bedrock's test key), nothing of the machine's
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
DEPLOYMENT_MODELS = {"azure-chat": "gpt-4o", "azure-responses": "gpt-5"}


def _timed_session(name: str, base_url: str, label: str) -> float:
    started = time.perf_counter()
    run_session(name, base_url, label)
    return time.perf_counter() - started


def _row(name: str, mode: str, requests: list[ReceivedRequest], seconds: float, prices: Any) -> dict[str, Any]:
    prompt = sum(r.usage.prompt_tokens for r in requests if r.usage)
    read = sum(r.usage.cache_read for r in requests if r.usage)
    client = flow(name)
    return {
        "scenario": name, "cloud": client.cloud, "api": client.api, "mode": mode, "upstream_calls": len(requests),
        "tokens_sent": prompt, "hit_share": read / prompt if prompt else 0.0,
        "breaks": sum(1 for r in requests if r.usage is not None and not r.usage.extends_previous),
        "cost": session_cost(requests, prices), "session_s": seconds,
    }  # fmt: skip


def measure() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    saved = {name: os.environ.get(name) for name in GATEWAY_AWS}
    os.environ.update(GATEWAY_AWS)
    try:
        with UpstreamServer(seed=0) as upstream, tempfile.TemporaryDirectory() as tmp:
            flags = [
                arg for cloud in ("bedrock", "vertex", "azure") for arg in (f"--{cloud}-upstream", upstream.base_url)
            ]
            log = Path(tmp) / "gateway.log"
            store = Path(tmp) / "store"  # a loaded machine may take a minute to start a process
            with gateway_process(store, upstream.base_url, upstream.openai_url, log, *flags, timeout_s=180) as gateway:
                for name in SESSION_FLOWS:
                    client = flow(name)
                    prices = PROVIDERS[client.cloud].cache_prices(
                        api_named(client.api), DEPLOYMENT_MODELS.get(name, "")
                    )
                    print(f"[gateway clouds] {name}", file=sys.stderr)
                    found: dict[str, tuple[list[ReceivedRequest], float]] = {}
                    for mode, base in (("direct", upstream.base_url), ("gateway", gateway)):
                        upstream.reset()
                        upstream.use(session_script)
                        seconds = _timed_session(name, base, mode)
                        found[mode] = (upstream.received(client.api, cloud=client.cloud), seconds)
                    direct = _row(name, "direct", *found["direct"], prices)
                    through = _row(name, "gateway", *found["gateway"], prices)
                    through["cost_x"] = through["cost"] / direct["cost"]
                    direct["cost_x"] = 1.0
                    rows += [direct, through]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'session':<26}{'mode':<9}{'calls':>6}{'tokens sent':>13}{'hits':>6}{'breaks':>7}{'cost':>11}"
          f"{'cost x':>8}{'session s':>10}")  # fmt: skip
    for r in rows:
        print(f"{r['scenario']:<26}{r['mode']:<9}{r['upstream_calls']:>6}{r['tokens_sent']:>13,}{r['hit_share']:>6.0%}"
              f"{r['breaks']:>7}{r['cost']:>11,.0f}{r['cost_x']:>8.1%}{r['session_s']:>10.1f}")  # fmt: skip


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| session (SDK) | mode | upstream calls | tokens sent | cache hits | prefix breaks | cost | cost x |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['mode']} | {r['upstream_calls']} | {r['tokens_sent']:,} | "
                     f"{r['hit_share']:.0%} | {r['breaks']} | {r['cost']:,.0f} | {r['cost_x']:.1%} |")  # fmt: skip
    return "\n".join(lines)


def median_session_s(rows: list[dict[str, Any]], mode: str) -> float:
    return float(statistics.median(r["session_s"] for r in rows if r["mode"] == mode))
