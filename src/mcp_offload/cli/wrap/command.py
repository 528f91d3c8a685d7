"""`mcp-offload wrap`: run a coding agent through the gateway, in one command.

    mcp-offload wrap [--port 8788] [--store DIR|redis://…] [--*-upstream URL] [--print-env] AGENT [ARGS…]
    mcp-offload wrap [options] --api NAME -- CMD [ARGS…]   (NAME: an LLM API, e.g. anthropic, openai, gemini)
    mcp-offload wrap --list

A gateway already listening on `--port` (asked on /healthz: it must say it is an mcp-offload gateway) is reused;
when none is, or when an upstream flag asks for other upstreams, one is started for the duration of the agent, on a
free loopback port with the user's store, and stopped after it. The agent gets what its module in
cli/wrap/agents/ says points it at the gateway: variables, command-line arguments, or a configuration file written
under mcp-offload's own data directory (never into the user's configuration). Its stdin, stdout, stderr and terminal
are its own, signals sent to `wrap` reach it, and its exit status is wrap's.

One line on stderr says which gateway the agent uses. `--print-env` prints the variables (as `export` lines), the
arguments and the files written, for the gateway on `--port`, and runs nothing; `--list` lists the agents. Bad input
(an unknown agent, a missing executable, an agent version whose configuration format wrap does not know, a port held
by something else, a gateway that does not start) is one line on stderr, exit 2, and nothing is started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import platformdirs

from mcp_offload.apis.registry import UnknownApi, accepted_names, api_named
from mcp_offload.cli.arg_types import OneLineParser, http_url, port
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.cli.wrap.agent_process import die_like, run_child
from mcp_offload.cli.wrap.agents import AGENTS, Agent
from mcp_offload.cli.wrap.agents.base import (
    Launch,
    WrapError,
    agent_finished,
    agent_upstreams,
    check_version,
    own_data_dir,
    refused_arguments,
)
from mcp_offload.cli.wrap.agents.generic import AnyAgent
from mcp_offload.gateway.options import DEFAULT_PORT
from mcp_offload.providers.registry import PROVIDERS
from mcp_offload.settings import Settings

PROG = "mcp-offload wrap"
HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"the gateway's port (default {DEFAULT_PORT})")
    p.add_argument("--store", help="store for a gateway started here (default: the user's, env MCP_OFFLOAD_STORE)")
    for provider in PROVIDERS.values():  # the gateway's upstream flags (`Provider.upstream`)
        setting = provider.upstream
        p.add_argument(setting.flag, type=http_url, help=f"{setting.help} for a gateway started here")
    p.add_argument("--api", help=f"any agent: the LLM API it speaks: {accepted_names()}")
    p.add_argument("--print-env", action="store_true", help="print what points the agent instead of running it")
    p.add_argument("--list", action="store_true", help="list the agents, the API each speaks and how it is pointed")
    p.add_argument("agent", nargs="?", help=f"{', '.join(AGENTS)}; with --api: the command to run (after --)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the agent's own arguments")
    return p


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.list:
        return list_agents()
    if args.agent is None:
        p.error("the following arguments are required: agent")
    return exit_status(lambda: run(args), prog=PROG)


def run(args: argparse.Namespace) -> int:
    agent, command = resolve_agent(args)
    if args.print_env:
        return print_env(agent, command, args.port)
    executable = find_executable(command[0], agent)
    check_version(agent, executable)
    refused_arguments(agent, command[1:])
    for flag, url in agent_upstreams(agent, os.environ).items():  # where the agent's own settings sent it
        if getattr(args, flag, None) is None:
            setattr(args, flag, url)
    own_upstreams = any(getattr(args, p.upstream.dest) for p in PROVIDERS.values())
    found = probe(args.port)
    if found == "busy" and not own_upstreams:
        raise WrapError(f"port {args.port} is in use by something that is not an mcp-offload gateway: pass --port")
    with gateway_for(args, found == "ours" and not own_upstreams) as (base, how):
        print(f"{PROG}: {command[0]} uses the gateway at {base} ({how})", file=sys.stderr, flush=True)
        plan = agent.launch(base, own_data_dir(), os.environ)
        try:
            returncode = run_child([executable, *plan.args, *command[1:]], {**os.environ, **plan.env})
        finally:
            agent_finished(agent, plan)
    return die_like(returncode)


def resolve_agent(args: argparse.Namespace) -> tuple[Agent, list[str]]:
    """(the agent: a known one, or with --api any command; its command line)."""
    rest = list(args.args)
    if args.api is not None:
        command = [args.agent, *rest]
        if command and command[0] == "--":
            command = command[1:]
        if not command:
            raise WrapError("--api needs the command to run: wrap --api openai -- CMD [ARGS…]")
        try:
            api = api_named(args.api)
        except UnknownApi as exc:
            raise WrapError(f"--api: {exc}") from None
        known = AGENTS.get(Path(command[0]).name)
        return known or AnyAgent(command[0], api), command
    known = AGENTS.get(args.agent)
    if known is None:
        names = ", ".join(AGENTS)
        raise WrapError(
            f"unknown agent {args.agent[:80]!r} (known: {names}); for any other agent taking a base-URL variable: "
            f"{PROG} --api NAME -- CMD [ARGS…] (NAME: {accepted_names()})"
        )
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return known, [known.executable, *rest]


def find_executable(name: str, agent: Agent) -> str:
    found = shutil.which(name)
    if found is None:
        hint = f" (install it: {agent.install.command()})" if agent.install and agent.executable == name else ""
        raise WrapError(f"{name[:200]!r} is not an executable on PATH{hint}")
    return found


def probe(port_number: int) -> str:
    """'free' (nothing listens), 'ours' (an mcp-offload gateway answers /healthz) or 'busy' (something else)."""
    try:
        with socket.create_connection((HOST, port_number), timeout=1.0):
            pass
    except OSError:
        return "free"
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port_number}/healthz", timeout=3) as response:
            body = json.loads(response.read(65536))
    except (OSError, ValueError):
        return "busy"
    ours = isinstance(body, dict) and body.get("service") == "gateway" and body.get("status") == "ok"
    return "ours" if ours else "busy"


@contextlib.contextmanager
def gateway_for(args: argparse.Namespace, reuse: bool) -> Iterator[tuple[str, str]]:
    """(base URL, how it came to be) of the gateway the agent uses; one started here is stopped on the way out."""
    if reuse:
        yield f"http://{HOST}:{args.port}", "already running"
        return
    store = args.store or Settings.from_env().store_location()
    log_path = Path(platformdirs.user_log_dir("mcp-offload", appauthor=False)) / "wrap-gateway.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    port_number = free_port()
    argv = [sys.executable, "-m", "mcp_offload", "gateway", "--host", HOST, "--port", str(port_number)]
    argv += ["--store", store, "--log-level", "WARNING", "--ingest-workers-at", "first-big-output"]  # one agent's
    for provider in PROVIDERS.values():
        if getattr(args, provider.upstream.dest):
            argv += [provider.upstream.flag, getattr(args, provider.upstream.dest)]
    with log_path.open("ab") as log:
        gateway = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        base = f"http://{HOST}:{port_number}"
        wait_ready(gateway, port_number, log_path)
        yield base, f"started for this run; store {store}; log {log_path}"
    finally:
        stop(gateway)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        number: int = sock.getsockname()[1]
        return number


def wait_ready(gateway: subprocess.Popen[bytes], port_number: int, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while probe(port_number) != "ours":
        if gateway.poll() is not None or time.monotonic() > deadline:
            lines = log_path.read_text(errors="replace").strip().splitlines()
            last = lines[-1][:300] if lines else "no output"
            raise WrapError(f"the gateway did not start (see {log_path}): {last}")
        time.sleep(0.1)


def stop(gateway: subprocess.Popen[bytes]) -> None:
    if gateway.poll() is not None:
        return
    gateway.terminate()
    try:
        gateway.wait(10)
    except subprocess.TimeoutExpired:
        gateway.kill()
        gateway.wait()


def print_env(agent: Agent, command: list[str], port_number: int) -> int:
    """What points `agent` at the gateway on `port_number`: `export` lines, then the command line with the arguments
    it needs (when it takes any) and the files written for it; nothing is run."""
    base = f"http://{HOST}:{port_number}"
    if probe(port_number) != "ours":
        note = f"{PROG}: no mcp-offload gateway answers on {base}: start one with `mcp-offload gateway`"
        print(note, file=sys.stderr)
    executable = shutil.which(command[0])
    if executable is not None:
        check_version(agent, executable)
    plan: Launch = agent.launch(base, own_data_dir(), os.environ)
    for name, value in plan.env.items():
        print(f"export {name}={shlex.quote(value)}")
    if plan.args:
        print(f"# {agent.title} takes command-line arguments, not only variables: run it as")
        print(" ".join(shlex.quote(arg) for arg in [command[0], *plan.args]) + " …")
    for path in plan.files:
        print(f"# wrote {path}")
    for flag, url in agent_upstreams(agent, os.environ).items():
        print(f"# its own settings send it to {url}: start the gateway with --{flag.replace('_', '-')} {url}")
    return 0


def list_agents() -> int:
    """The agents wrap knows: name and program, the APIs wrap points it at, how, and the package it comes from."""
    width = max(len(name) for name in AGENTS) + 2
    for agent in AGENTS.values():
        print(f"{agent.name.ljust(width)}{agent.title}: {', '.join(api.title for api in agent.apis)}")
        print(f"{'':{width}}pointed by {agent.pointed_by}")
        if agent.install is not None:
            print(f"{'':{width}}install: {agent.install.command()}")
    print(f"any other agent: {PROG} --api NAME -- CMD [ARGS…] (NAME: {accepted_names()}; the API's base-URL variable)")
    return 0
