"""`mcp-offload outputs {list,show,rm,clear,gc}`: the operator's view of a store, any backend, any session.

Safe next to running servers: listing is a tolerant scan (outputs appearing or vanishing meanwhile are just in
or out), `show` reads through `store.open` (a whole, published output or nothing), removals go through the
backend's `delete`/`sweep` (the same O_NOFOLLOW walk and locks as the server). Handles are validated before
anything is looked up; an unknown or malformed handle changes nothing and exits 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import anyio

from mcp_offload.cli.arg_types import OneLineParser, duration
from mcp_offload.cli.exit_status import CommandDeclined, exit_status
from mcp_offload.cli.output_view import as_json, human_bytes, rebuild_ingested, render_show, render_table
from mcp_offload.cli.store_flags import add_redis_store_flags, redis_store_overrides
from mcp_offload.cli.store_location import missing_store, nothing_stored_yet, unused_default_store
from mcp_offload.errors import ExpiredHandle, InvalidHandle, UnknownHandle
from mcp_offload.settings import Settings
from mcp_offload.store import AdminStore, ScannedOutput, open_store
from mcp_offload.store.handles import validate_handle
from mcp_offload.store.lifecycle import StoreLimits

_SESSION = re.compile(r"[0-9a-f]{1,32}", re.ASCII)


def session_prefix(text: str) -> str:
    if not _SESSION.fullmatch(text.lower()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a session (hex, as `outputs list` shows it)")
    return text.lower()


def parser() -> argparse.ArgumentParser:
    store_flag = OneLineParser(add_help=False)
    store_flag.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        help=(
            "store directory, redis://host:port/db or redis+cluster://host:port[,…] "
            "(default: env MCP_OFFLOAD_STORE, else the per-user store)"
        ),
    )
    add_redis_store_flags(store_flag)
    parser = OneLineParser(
        prog="mcp-offload outputs", description="Inspect and clean the output store.", parents=[store_flag]
    )
    sub = parser.add_subparsers(dest="action", required=True, metavar="{list,show,rm,clear,gc}")
    ls = sub.add_parser("list", parents=[store_flag], help="list stored outputs, newest first")
    ls.add_argument("--session", type=session_prefix, help="only this session (a prefix is enough)")
    ls.add_argument("--older-than", type=duration, metavar="AGE", help="only outputs created longer ago (2h, 3d)")
    ls.add_argument("--newer-than", type=duration, metavar="AGE", help="only outputs created more recently")
    ls.add_argument("--json", action="store_true", help="a JSON array instead of a table")
    show = sub.add_parser("show", parents=[store_flag], help="metadata and preview of one output")
    show.add_argument("handle")
    show.add_argument("--raw", action="store_true", help="write the exact content bytes to stdout instead")
    rm = sub.add_parser("rm", parents=[store_flag], help="delete outputs by handle")
    rm.add_argument("handles", nargs="+", metavar="HANDLE")
    clear = sub.add_parser("clear", parents=[store_flag], help="delete one session's outputs, or all of them")
    clear.add_argument("--session", type=session_prefix, help="only this session (a prefix is enough)")
    clear.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    sub.add_parser("gc", parents=[store_flag], help="remove expired outputs and crashed writers' debris now")
    return parser


def _open(args: argparse.Namespace) -> tuple[AdminStore, Settings]:
    """The store; `CommandDeclined` for a store directory that does not exist (never created here)."""
    settings = Settings.from_env().with_overrides(store=getattr(args, "store", None), **redis_store_overrides(args))
    where = settings.store_location()
    problem = missing_store(where)
    if problem is not None:
        raise CommandDeclined(problem)
    limits = StoreLimits.from_settings(settings)
    return open_store(where, limits=limits, read_from_replicas=settings.store_read_from_replicas), settings


def _select(outputs: list[ScannedOutput], args: argparse.Namespace, now: float) -> list[ScannedOutput]:
    session = getattr(args, "session", None)
    older, newer = getattr(args, "older_than", None), getattr(args, "newer_than", None)
    return [
        o
        for o in outputs
        if (session is None or o.scope.startswith(session))
        and (older is None or now - o.meta.created >= older)
        and (newer is None or now - o.meta.created < newer)
    ]


async def _find(store: AdminStore, handles: list[str]) -> dict[str, ScannedOutput]:
    """Each handle's output; `CommandDeclined` (nothing touched) if any is malformed or not in the store."""
    for handle in handles:
        try:
            validate_handle(handle)
        except InvalidHandle:
            shown = handle[:60]
            raise CommandDeclined(f"{shown!r} is not a handle (handles look like out_ + 26 letters/digits)") from None
    found = {o.meta.handle: o for o in await store.scan()}
    missing = [h for h in handles if h not in found]
    if missing:
        raise CommandDeclined(f"no output {', '.join(missing)} in the store; nothing was removed or shown")
    return {h: found[h] for h in handles}


async def _list(store: AdminStore, args: argparse.Namespace) -> None:
    now = time.time()
    outputs = _select(await store.scan(), args, now)
    if args.json:
        print(json.dumps([as_json(o) for o in outputs], indent=2))
    else:
        sys.stdout.write(render_table(outputs, now))


async def _show(store: AdminStore, settings: Settings, args: argparse.Namespace) -> None:
    out = (await _find(store, [args.handle]))[args.handle]
    try:
        async with store.open(out.scope, out.meta.handle) as stored:
            content = bytes(await anyio.to_thread.run_sync(stored.contiguous))
    except (UnknownHandle, ExpiredHandle):
        raise CommandDeclined(f"output {args.handle} was removed meanwhile") from None
    if args.raw:
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
        return
    from mcp_offload.tokens import load_counter

    ingested = await anyio.to_thread.run_sync(
        rebuild_ingested, out.meta, content, settings, load_counter(settings.encoding)
    )
    sys.stdout.write(render_show(out, ingested, time.time()))


async def _remove(store: AdminStore, outputs: list[ScannedOutput]) -> tuple[int, int]:
    """Delete each; one that vanished meanwhile (expired, removed by someone else) is simply not counted."""
    count = freed = 0
    for out in outputs:
        try:
            await store.delete(out.scope, out.meta.handle)
        except (UnknownHandle, ExpiredHandle):
            continue
        count += 1
        freed += out.used_bytes
    return count, freed


async def _rm(store: AdminStore, args: argparse.Namespace) -> None:
    found = await _find(store, list(dict.fromkeys(args.handles)))
    for out in found.values():
        count, freed = await _remove(store, [out])
        print(f"removed {out.meta.handle} ({human_bytes(freed)})" if count else f"{out.meta.handle} was already gone")


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise CommandDeclined("not deleting without confirmation: run it in a terminal, or add --yes")
    answer = input(f"{question} [y/N] ").strip().lower()
    if answer not in {"y", "yes"}:
        raise CommandDeclined("nothing deleted")


async def _clear(store: AdminStore, args: argparse.Namespace) -> None:
    outputs = _select(await store.scan(), args, time.time())
    if not outputs:
        print("nothing to clear")
        return
    which = f"session {args.session}…" if args.session else f"{len({o.scope for o in outputs})} session(s)"
    total = sum(o.used_bytes for o in outputs)
    _confirm(f"Delete {len(outputs)} output(s), {human_bytes(total)}, of {which}?", args.yes)
    count, freed = await _remove(store, outputs)
    print(f"removed {count} output(s), {human_bytes(freed)}")


async def _gc(store: AdminStore) -> None:
    before = await store.scan(expired=True)
    report = await store.sweep()
    after = {(o.scope, o.meta.handle) for o in await store.scan(expired=True)}
    gone = [o for o in before if (o.scope, o.meta.handle) not in after and o.expires <= time.time()]
    print(
        f"expired outputs removed: {report.expired} ({human_bytes(sum(o.used_bytes for o in gone))}); "
        f"crashed writers' debris: {report.debris}; old tombstones: {report.tombstones}"
    )


def _fresh(args: argparse.Namespace) -> bool:
    """No store named and the per-user one not created yet: say there is nothing (list: `[]` with --json); True
    when that answered the command. `show` and `rm` of a handle still fail: there is no such output."""
    fresh = unused_default_store(Settings.from_env().with_overrides(store=getattr(args, "store", None)))
    if fresh is None:
        return False
    if args.action in ("show", "rm"):
        raise CommandDeclined(f"no such output, {nothing_stored_yet(fresh)}")
    if args.action == "list" and args.json:
        print("[]")
    else:
        print(nothing_stored_yet(fresh))
    return True


async def run(args: argparse.Namespace) -> None:
    if _fresh(args):
        return
    store, settings = _open(args)
    try:
        if args.action == "list":
            await _list(store, args)
        elif args.action == "show":
            await _show(store, settings, args)
        elif args.action == "rm":
            await _rm(store, args)
        elif args.action == "clear":
            await _clear(store, args)
        else:
            await _gc(store)
    finally:
        await store.aclose()


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return exit_status(lambda: anyio.run(run, args))
