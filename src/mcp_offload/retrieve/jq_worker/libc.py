"""The C library calls the worker makes besides libjq: a read-only mapping of the stored file, heap accounting
(glibc `mallinfo2`) and giving freed heap back to the OS (`malloc_trim`). The sandbox uses `load_libc` too.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any


def load_libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


class HeapMeter:
    """Heap bytes in use (glibc `mallinfo2`: exact, all arenas), to price a parsed input; None elsewhere."""

    def __init__(self) -> None:
        self._mallinfo2: Any = None
        with contextlib.suppress(AttributeError, OSError):
            func = load_libc().mallinfo2
            func.restype = _MallInfo2
            func.argtypes = []
            self._mallinfo2 = func

    def used(self) -> int | None:
        if self._mallinfo2 is None:
            return None
        info = self._mallinfo2()
        return int(info.uordblks + info.hblkhd)


class Mapping:
    """A read-only private mapping of the stored file (no copy; pages come from the page cache)."""

    PROT_READ, MAP_PRIVATE = 1, 2

    def __init__(self, fd: int, size: int) -> None:
        libc = load_libc()
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._munmap = libc.munmap
        self.size = size
        self.address = 0
        if size:
            address = libc.mmap(None, size, self.PROT_READ, self.MAP_PRIVATE, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise MemoryError("mmap of the stored output failed")
            self.address = address
            with contextlib.suppress(AttributeError, OSError):
                libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(size), 2)  # MADV_SEQUENTIAL

    def close(self) -> None:
        if self.address:
            self._munmap(self.address, self.size)
            self.address = 0


def trim_heap() -> None:
    """Give freed heap back to the OS (glibc only; a no-op elsewhere)."""
    with contextlib.suppress(AttributeError, OSError):
        load_libc().malloc_trim(0)
