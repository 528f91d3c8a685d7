"""Filesystem backend: one directory per output, published by an atomic rename, bounded by `StoreLimits`.

Layout under the root (directories 0700, files 0600):

    v1/lock                          flock'd (exclusive) by a put while it checks quotas, evicts and publishes
    v1/tmp/w-<random>/               staging: content, index, meta.json are written and fsynced here
    v1/tmp/d-<random>/               an evicted/deleted output being removed (renamed here first, then rmtree)
    v1/scopes/<scope>/<handle>/      published: rename(2) of the staging directory, all or nothing
    v1/scopes/<scope>/<handle>/sidecar.<name>   derived data kept with the output (sidecars.py), removed with it
    v1/tombs/<scope>/<handle>        tombstone: "expired" or "evicted"; mtime = when (see lifecycle.py)

Crash safety: an output becomes visible only by the rename of a complete, fsynced directory, and stops being
visible by the rename of that directory into tmp/ (before anything in it is deleted). `kill -9` at any point
leaves either the whole output or nothing under scopes/, plus at most some debris in tmp/ that `sweep()`
removes: a staging directory is locked (flock) by its writer, so debris is recognised as unlocked and older
than `DEBRIS_GRACE_S`.

Lifecycle bookkeeping lives in inode times of `content`, so a quota check costs one `stat` per output and
nothing is rewritten on read: mtime = when it was stored (drives expiry), atime = when it was last opened
(drives LRU; set explicitly with utime on every open, so `noatime` mounts do not matter).

Readers and eviction: `open()` holds a shared flock on the output's directory for as long as the output is
open; eviction takes an exclusive non-blocking flock first and skips outputs it cannot lock, so an output
is never evicted while any process reads it. An explicit `delete()` does not wait: it renames the directory
away, and readers in flight keep reading their mmap, which stays valid after unlink on Linux.

Every path is walked from the root with `openat`-style directory fds and `O_NOFOLLOW`, so a symlink planted
anywhere inside the store is refused rather than followed. Only validated handles and hex scope keys ever
become path components.

One concept per module, each a layer that uses only the ones below it (import-linter checks the order):

    store.py        `FilesystemStore`: the `Store` protocol's async face, opening the tree and running sweeps
    publish.py      put: stage, fsync, check quotas and publish by rename under the store lock
    sweep.py        periodic removal of expired outputs, crashed writers' debris, empty scope directories
    reading.py      the locked open (shared flock per reader), meta, list, explicit delete
    admin_scan.py   every output with its times, for the `outputs` admin command
    sidecars.py     files kept with an output (a search index), written atomically, removed with it
    eviction.py     the quota scan, LRU order, locking an output for removal and unpublishing it
    tombstones.py   "expired"/"evicted" markers: written on removal, read into the caller's error, pruned
    tree.py         the on-disk layout: O_NOFOLLOW directory walking, the store lock, small reads and writes
"""

from mcp_offload.store.fs.store import FilesystemStore
from mcp_offload.store.fs.sweep import DEBRIS_GRACE_S

__all__ = ["DEBRIS_GRACE_S", "FilesystemStore"]
