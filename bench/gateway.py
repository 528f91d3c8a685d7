"""The LLM gateway against going direct, in one run: cost at the providers' cache prices, tokens, cache hits, latency.

Each scenario is an agent session replayed turn by turn (seeded, generated data): the scripted upstream
(tests/llm_upstream, which simulates the providers' prompt caches) answers every request with the next tool call,
and the bench plays the client, appending the tool's output and sending the whole history again, as agents do.
Four clients run the same session side by side, turn by turn (so the machine's drift hits them alike):

* direct     straight to the upstream: the yardstick;
* gateway    through the real `mcp-offload gateway` process (transparent retrieval; the model calls
             `search_large_output` now and then, answered by the gateway's loop);
* clear-old  a lossy baseline as a request transform: every tool result but the last 3 replaced by a placeholder
             (what clearing old tool results does when applied every turn);
* naive      a naive compressor as a request transform: every turn, all tool results are cut (head + tail) to share
             a fixed budget, so each turn rewrites results the previous turn already sent.

The "unmarked" sessions are a plain SDK app that sets no `cache_control`: going direct, Anthropic caches nothing;
through the gateway, it adds the breakpoints such a client would want (gateway/client_breakpoints.py). "unmarked one
call" is a single request never followed (the case where a cache write cannot pay back).

Prices (multiples of the model's base input price; cost.py): Anthropic 5-minute cache: input 1x, cache write
1.25x, cache read 0.1x, output 5x (Sonnet); OpenAI: no write premium, cached input 0.5x for gpt-4o and 0.1x for
gpt-5, output 4x (gpt-4o) / 8x (gpt-5); Gemini 2.5 Flash (implicit caching): no write premium, cached input 0.1x,
output 8.33x (the Gemini client side: gateway_gemini.py). Cost is in base-input-token units; `cost x` is the ratio
to direct.
`breaks` counts requests whose prompt does not start with the whole previous prompt of the session (a cache
miss caused by the client); the gateway's one break is the request on which it appends its retrieval tools.
Added latency is per turn, gateway minus direct (whole streamed answer); TTFT is the time to the first delta.

The pieces: gateway_outputs.py (the seeded tool outputs), gateway_session.py (the agent's tools and the upstream's
script), gateway_baselines.py (clear-old, naive), gateway_stream.py (stream accumulators), gateway_gemini.py (the
Gemini client), gateway_upstream.py (the upstream's process), gateway_report.py (the tables); this module runs them.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

HERE = Path(__file__).resolve().parent
# The scripted upstream is the tests' (tests/llm_upstream). Appended, not prepended: tests/gateway must not shadow
# this module.
sys.path.append(str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))  # run as a script: `bench` from the repo root

from bench import gateway_clouds  # noqa: E402
from bench import gateway_gemini as gemini  # noqa: E402
from bench.gateway_baselines import clear_old, count_results, naive_compressor, transform_results  # noqa: E402
from bench.gateway_outputs import Scenario  # noqa: E402
from bench.gateway_report import markdown, print_table  # noqa: E402
from bench.gateway_session import SYSTEM_PROMPT, TOOLS, bench_script  # noqa: E402
from bench.gateway_stream import ACCUMULATORS, is_delta  # noqa: E402
from bench.gateway_upstream import RemoteUpstream, upstream_process  # noqa: E402
from llm_upstream import CacheUsage, UpstreamServer, session_key  # noqa: E402
from llm_upstream.errors import ApiKind  # noqa: E402
from mcp_offload.apis.registry import api_named  # noqa: E402
from mcp_offload.providers.registry import home_prices  # noqa: E402
from support.gateway_process import gateway_process  # noqa: E402

MODES = ("direct", "gateway", "clear-old", "naive")
MODELS: dict[ApiKind, str] = {
    "anthropic": "claude-sonnet-4-6",
    "openai_chat": "gpt-4o",
    "responses": "gpt-5",
    "gemini": gemini.MODEL,
}
OUTPUT_PRICE = {"claude-sonnet-4-6": 5.0, "gpt-4o": 4.0, "gpt-5": 8.0, gemini.MODEL: gemini.OUTPUT_PRICE}


# -- the sessions (their outputs: gateway_outputs.py; the upstream's script: gateway_session.py) -------------------
def scenarios(quick: bool) -> list[Scenario]:
    big = (30_000, 150_000) if quick else (300_000, 2_500_000)
    mid = (3_000, 12_000) if quick else (4_000, 30_000)
    turns = 12 if quick else 40
    rng = random.Random(2026)

    def heavy(kinds: list[str]) -> list[tuple[str, int]]:
        steps = []
        for step in range(turns):
            size = rng.randint(*big) if step % 4 == 1 else rng.randint(*mid)
            steps.append((kinds[step % len(kinds)], size))
        return steps

    retrieve = frozenset(range(5, turns, 8))
    return [
        Scenario("tool-heavy json+logs", "anthropic", heavy(["json", "log"]), retrieve),
        Scenario("tool-heavy logs+diffs", "openai_chat", heavy(["log", "diff"]), retrieve),
        Scenario("tool-heavy json+diffs", "responses", heavy(["json", "diff"]), retrieve),
        Scenario("tool-heavy logs+json", "gemini", heavy(["log", "json"]), retrieve),
        Scenario(
            "small results only",
            "anthropic",
            [("small", rng.randint(200, 1_800)) for _ in range(turns)],
            tool_heavy=False,
        ),
        Scenario("short session", "anthropic", [("json", big[1]), ("small", 800), ("small", 600)], tool_heavy=False),
        # a plain SDK app that sets no cache_control: direct, nothing is cached; the gateway adds the breakpoints
        Scenario("unmarked json+logs", "anthropic", heavy(["json", "log"]), retrieve, marks=False),
        Scenario(
            "unmarked small results",
            "anthropic",
            [("small", rng.randint(200, 1_800)) for _ in range(turns)],
            tool_heavy=False,
            marks=False,
        ),
        Scenario("unmarked one call", "anthropic", [], tool_heavy=False, marks=False),
    ]


# -- the client side: one conversation per mode --------------------------------------------------------------------
@dataclass(slots=True)
class Timing:
    total_s: float
    ttft_s: float | None


@dataclass(slots=True)
class Conversation:
    scenario: Scenario
    mode: str
    key: str
    history: list[dict[str, Any]] = field(default_factory=list)
    timings: list[Timing] = field(default_factory=list)
    done: bool = False

    def __post_init__(self) -> None:
        first = f"Session: {self.scenario.name}\nWork through the steps, one tool call each."
        if self.scenario.api == "gemini":
            self.history.append(gemini.first_message(first))
        elif self.scenario.api == "responses":
            self.history.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": first}]})
        else:
            self.history.append({"role": "user", "content": first})

    def body(self) -> dict[str, Any]:
        api, model = self.scenario.api, MODELS[self.scenario.api]
        history = self.history
        if self.mode == "clear-old":
            history = transform_results(api, history, clear_old)
        elif self.mode == "naive":
            history = transform_results(api, history, naive_compressor(count_results(api, history)))
        if api == "gemini":
            return gemini.body(history, TOOLS, SYSTEM_PROMPT)
        if api == "anthropic":
            messages = copy.copy(history)
            system: Any = SYSTEM_PROMPT
            if self.scenario.marks:
                last = copy.deepcopy(messages[-1])
                if isinstance(last["content"], str):
                    last["content"] = [{"type": "text", "text": last["content"]}]
                last["content"][-1]["cache_control"] = {"type": "ephemeral"}
                messages[-1] = last
                system = [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
            tools = [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]} for t in TOOLS]
            return {
                "model": model,
                "max_tokens": 4096,
                "stream": True,
                "tools": tools,
                "messages": messages,
                "system": system,
            }
        if api == "openai_chat":
            tools = [
                {
                    "type": "function",
                    "function": {"name": t["name"], "description": t["description"], "parameters": t["schema"]},
                }
                for t in TOOLS
            ]
            return {
                "model": model,
                "stream": True,
                "stream_options": {"include_usage": True},
                "tools": tools,
                "messages": [{"role": "system", "content": SYSTEM_PROMPT}, *history],
            }
        tools = [
            {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["schema"]}
            for t in TOOLS
        ]
        return {
            "model": model,
            "stream": True,
            "store": False,
            "instructions": SYSTEM_PROMPT,
            "tools": tools,
            "input": history,
        }

    def _output_for(self, args: dict[str, Any]) -> str:
        """The tool output of a call's arguments (`run step N`)."""
        return self.scenario.output(int(str(args.get("command", "run step 0")).rsplit(" ", 1)[-1]))

    def absorb(self, message: Any) -> None:
        """Append the model's answer and, for its tool call, the tool's output (the next step's)."""
        api = self.scenario.api
        if api == "gemini":
            self.done = not gemini.absorb(self.history, message, self._output_for)
            return
        if api == "anthropic":
            self.history.append({"role": "assistant", "content": message})
            calls = [(b["id"], b["input"]) for b in message if b["type"] == "tool_use"]
        elif api == "openai_chat":
            self.history.append(message)
            calls = [(c["id"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]
        else:
            self.history.extend(message)
            calls = [(i["call_id"], json.loads(i["arguments"])) for i in message if i["type"] == "function_call"]
        if not calls:
            self.done = True
            return
        results = []
        for call_id, args in calls:
            step = int(str(args.get("command", "run step 0")).rsplit(" ", 1)[-1])
            output = self.scenario.output(step)
            if api == "anthropic":
                results.append({"type": "tool_result", "tool_use_id": call_id, "content": output})
            elif api == "openai_chat":
                self.history.append({"role": "tool", "tool_call_id": call_id, "content": output})
            else:
                self.history.append({"type": "function_call_output", "call_id": call_id, "output": output})
        if api == "anthropic":
            self.history.append({"role": "user", "content": results})


# -- streaming: send one request, accumulate the answer, time it ---------------------------------------------------
def send(http: httpx2.Client, base: str, conv: Conversation) -> Any:
    api = conv.scenario.api
    paths = {"anthropic": "/v1/messages", "openai_chat": "/v1/chat/completions", "responses": "/v1/responses"}
    path = gemini.path(MODELS[api]) if api == "gemini" else paths[api]
    headers = _headers(api, conv.key)
    payload = json.dumps(conv.body()).encode()
    started = time.perf_counter()
    ttft: float | None = None
    accumulate = ACCUMULATORS[api]()
    with http.stream(
        "POST", base + path, content=payload, headers={**headers, "content-type": "application/json"}
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{conv.mode} {path}: {response.status_code} {response.read()[:500]!r}")
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                break
            event = json.loads(data)
            if ttft is None and is_delta(api, event):
                ttft = time.perf_counter() - started
            accumulate.send(event)
    conv.timings.append(Timing(time.perf_counter() - started, ttft))
    return accumulate.result()


def _headers(api: ApiKind, key: str) -> dict[str, str]:
    if api == "gemini":
        return gemini.headers(key)
    if api == "anthropic":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return {"authorization": f"Bearer {key}"}


# -- the upstream, in its own process (gateway_upstream.py starts it) ---------------------------------------------
def serve_upstream(quick: bool) -> None:
    """The child side of upstream_process: serve until stdin closes."""
    plans = {s.name: s for s in [*scenarios(quick), PROBE]}
    with UpstreamServer(bench_script(plans), seed=1) as upstream:
        print(upstream.port, flush=True)
        sys.stdin.read()


# -- one scenario, four modes, turn by turn -------------------------------------------------------------------------
def run_scenario(
    scenario: Scenario, upstream: RemoteUpstream, gateway: str, http: httpx2.Client
) -> list[dict[str, Any]]:
    tag = scenario.name.replace(" ", "-").replace("+", "-")
    convs = {mode: Conversation(scenario, mode, f"bench-{tag}-{mode}-{os.getpid()}") for mode in MODES}
    for _ in range(len(scenario.steps) + 2):
        for mode, conv in convs.items():
            if not conv.done:
                conv.absorb(send(http, gateway if mode == "gateway" else upstream.base_url, conv))
        if all(c.done for c in convs.values()):
            break
    rows = []
    log = upstream.requests()
    direct = summarize(scenario, convs["direct"], log)
    for mode, conv in convs.items():
        figures = direct if mode == "direct" else summarize(scenario, conv, log)
        figures["cost_x"] = figures["cost"] / direct["cost"] if direct["cost"] else None
        if mode == "gateway":
            added = [g.total_s - d.total_s for g, d in zip(conv.timings, convs["direct"].timings, strict=False)]
            figures["added_p50_ms"] = statistics.median(added) * 1000
            figures["added_p99_ms"] = percentile(added, 99) * 1000
        rows.append({"scenario": scenario.name, "api": scenario.api, "mode": mode, **figures})
    return rows


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] if ordered else 0.0


def summarize(scenario: Scenario, conv: Conversation, log: list[dict[str, Any]]) -> dict[str, Any]:
    """The conversation's figures from the upstream's log (its requests are those of its own API key)."""
    api, model = scenario.api, MODELS[scenario.api]
    session = session_key(api, _headers(api, conv.key), model)
    requests = [r for r in log if r["session"] == session and r["status"] == 200]
    usages = [CacheUsage(**r["usage"]) for r in requests if r["usage"]]
    prices = home_prices(api_named(api), model)
    out_price = OUTPUT_PRICE[model]
    cost = sum(
        prices.input_cost(uncached=u.uncached, cache_read=u.cache_read, cache_write=u.cache_write) for u in usages
    )
    cost += sum(r["output_tokens"] for r in requests) * out_price
    prompt = sum(u.prompt_tokens for u in usages)
    ttfts = [t.ttft_s for t in conv.timings if t.ttft_s is not None]
    return {
        "turns": len(conv.timings),
        "upstream_requests": len(requests),
        "tokens_sent": prompt,
        "max_prompt": max((u.prompt_tokens for u in usages), default=0),
        "cache_read": sum(u.cache_read for u in usages),
        "cache_write": sum(u.cache_write for u in usages),
        "hit_share": sum(u.cache_read for u in usages) / prompt if prompt else 0.0,
        "breaks": sum(1 for u in usages if not u.extends_previous),
        "cost": cost,
        "ttft_p50_ms": statistics.median(ttfts) * 1000 if ttfts else None,
        "turn_p50_ms": statistics.median(t.total_s for t in conv.timings) * 1000,
        "lossless": conv.mode in ("direct", "gateway"),
        "facts_found": retrieved(conv, "Retrieved ok."),
        "facts_missing": retrieved(conv, "Retrieved MISSING."),
        "prices": f"in 1x, write {prices.write}x, read {prices.read}x, out {out_price}x",
    }


PROBE = Scenario("latency probe", "anthropic", [("small", 600)] * 1000, tool_heavy=False)


def probe_latency(upstream: RemoteUpstream, gateway: str, http: httpx2.Client, calls: int) -> dict[str, Any]:
    """A call with nothing to offload (an 8-step history of small results), direct and through the gateway in
    alternation: the gateway's added time per call and both TTFTs."""
    conv = {mode: Conversation(PROBE, mode, f"bench-probe-{mode}-{os.getpid()}") for mode in ("direct", "gateway")}
    for c in conv.values():
        for _ in range(8):
            c.absorb(send(http, gateway if c.mode == "gateway" else upstream.base_url, c))
        c.timings.clear()
    for _ in range(calls):
        for mode, c in conv.items():
            send(http, gateway if mode == "gateway" else upstream.base_url, c)  # the same request again
    direct, through = conv["direct"].timings, conv["gateway"].timings
    added = [g.total_s - d.total_s for g, d in zip(through, direct, strict=True)]
    return {
        "scenario": "no-offload call", "api": "anthropic", "mode": "gateway", "turns": calls,
        "added_p50_ms": statistics.median(added) * 1000, "added_p99_ms": percentile(added, 99) * 1000,
        "ttft_p50_ms": statistics.median(t.ttft_s or 0 for t in through) * 1000,
        "direct_ttft_p50_ms": statistics.median(t.ttft_s or 0 for t in direct) * 1000,
        "turn_p50_ms": statistics.median(t.total_s for t in through) * 1000,
        "direct_turn_p50_ms": statistics.median(t.total_s for t in direct) * 1000,
    }  # fmt: skip


def retrieved(conv: Conversation, marker: str) -> int:
    """How many of the model's retrieval calls (answered inside the gateway) found, or missed, their fact."""
    return sum(_said(item).count(marker) for item in conv.history)


def _said(item: dict[str, Any]) -> str:
    """An item's text as the bench searches it (a Gemini content's streamed text parts joined)."""
    if isinstance(item.get("parts"), list):
        return "".join(str(p.get("text", "")) for p in item["parts"])
    return json.dumps(item)


def measure(quick: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-gateway-") as store,
        tempfile.TemporaryDirectory(prefix="bench-gateway-log-") as logs,
        upstream_process(quick) as upstream,
        gateway_process(
            store,
            upstream.base_url,
            upstream.openai_url,
            Path(logs) / "gateway.log",
            "--log-level",
            "WARNING",
            "--gemini-upstream",
            upstream.base_url,
        ) as gateway,
        httpx2.Client(timeout=600) as http,
    ):
        print(f"[gateway] no-offload call latency ({50 if quick else 300} calls each way)", file=sys.stderr)
        rows.append(probe_latency(upstream, gateway, http, 50 if quick else 300))
        for scenario in scenarios(quick):
            print(f"[gateway] {scenario.name} ({scenario.api}, {len(scenario.steps)} steps)", file=sys.stderr)
            rows.extend(run_scenario(scenario, upstream, gateway, http))
    return rows


def run(args: Any) -> list[dict[str, object]]:
    """bench/run.py's entry: one row per scenario and mode; `ratio` is the cost over going direct."""
    rows = measure(bool(getattr(args, "quick", False)))
    print_table(rows)
    out = []
    for row in rows:
        if "tokens_sent" not in row:  # the latency probe
            note = (
                f"added p50 {row['added_p50_ms']:.1f} ms / p99 {row['added_p99_ms']:.1f} ms; TTFT "
                f"{row['ttft_p50_ms']:.1f} ms vs {row['direct_ttft_p50_ms']:.1f} ms direct"
            )
            out.append({
                "suite": "gateway", "case": "no-offload call / gateway", "size": "anthropic",
                "ours_ms": row["turn_p50_ms"], "yardstick": "direct", "yardstick_ms": row["direct_turn_p50_ms"],
                "ratio": row["turn_p50_ms"] / row["direct_turn_p50_ms"], "note": note, **row,
            })  # fmt: skip
            continue
        note = (
            f"{row['mode']}: {row['tokens_sent']:,} tokens sent, cache hits {row['hit_share']:.0%}, "
            f"{row['breaks']} prefix breaks"
        )
        if row.get("added_p50_ms") is not None:
            note += f", added p50 {row['added_p50_ms']:.1f} ms / p99 {row['added_p99_ms']:.1f} ms"
        out.append(
            {
                "suite": "gateway",
                "case": f"{row['scenario']} / {row['mode']}",
                "size": row["api"],
                "ours_ms": row["turn_p50_ms"],
                "yardstick": "direct (cost)",
                "ratio": row["cost_x"],
                "note": note,
                **row,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="12 turns, outputs of 3-150 KB (a smoke run)")
    parser.add_argument("--out", default=str(HERE / "results" / "gateway.json"))
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)  # internal: the child
    parser.add_argument(
        "--markdown", metavar="JSON", help="print the docs/benchmarks.md table of an earlier run's JSON and exit"
    )
    parser.add_argument(
        "--clouds", action="store_true", help="the clouds' sessions instead (Bedrock, Vertex, Azure; gateway_clouds.py)"
    )
    args = parser.parse_args()
    if args.markdown:
        found = json.loads(Path(args.markdown).read_text())
        cloudy = bool(found) and "cloud" in found[0]
        print(gateway_clouds.markdown(found) if cloudy else markdown(found))
        return
    if args.clouds:
        cloud_rows = gateway_clouds.measure()
        gateway_clouds.print_table(cloud_rows)
        out = Path(args.out).with_name("gateway_clouds.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(cloud_rows, indent=2, default=str))
        print(f"wrote {out}", file=sys.stderr)
        return
    if args.serve_upstream:
        serve_upstream(args.quick)
        return
    rows = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2, default=str))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
