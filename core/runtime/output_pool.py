"""Host arrays for the values a run makes, their memory kept for the next
run once nobody holds them.

A program's outputs are new arrays in every call, handed to the caller.
Arrays of a few MiB come from fresh pages: glibc maps them anew (past its
mmap threshold) or trims its heap once they are freed, depending on the
heap's history.  Then every call faults in and zeroes every page of its
outputs again, 0.3-0.8 ms for a 16 MiB image on 16 cores and more through
fewer threads, and a benchmark has a fast and a slow mode.

``OutputPool.empty`` hands out an array over a kept block of memory.  The
array's base is a lease; when the last array over the block goes (the
caller's result and every view of it), the lease gives the block back, and
the next run's array uses the same pages, already mapped and often still
in the cache.  Blocks start on a cache line, staggered in their pages
(host_arrays.py).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ..host_arrays import aligned_empty

MIN_BYTES = 1 << 20
"""Smaller arrays come from numpy as usual: malloc serves them from its
heap without new pages."""
IDLE_PER_SIZE = 2
"""Blocks of one size kept while unused, per array of that size a run
makes (:meth:`OutputPool.expect`; one if none is expected); more are
freed.  Two: a caller that holds a run's results while the next run makes
its own."""


class OutputPool:
    """Blocks of memory for arrays made in every run, by size."""

    def __init__(self):
        self._idle: dict[int, list[np.ndarray]] = {}
        self._per_run: dict[int, int] = {}
        self._lock = threading.Lock()

    def expect(self, shape: tuple[int, ...], dtype) -> None:
        """Say that a run makes an array of this layout: one more block of
        its size is kept while unused."""
        size = math.prod(shape) * np.dtype(dtype).itemsize
        with self._lock:
            self._per_run[size] = self._per_run.get(size, 0) + 1

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised array, as ``np.empty``, over a kept block when
        it is MIN_BYTES or more."""
        dtype = np.dtype(dtype)
        size = math.prod(shape) * dtype.itemsize
        if size < MIN_BYTES:
            return np.empty(shape, dtype)
        with self._lock:
            idle = self._idle.get(size)
            block = idle.pop() if idle else None
        if block is None:
            block = aligned_empty((size,), np.uint8)
        return np.asarray(_Lease(self, block, tuple(shape), dtype))

    def idle_blocks(self) -> int:
        """Blocks kept and not in use."""
        with self._lock:
            return sum(len(blocks) for blocks in self._idle.values())

    def _give_back(self, block: np.ndarray) -> None:
        with self._lock:
            idle = self._idle.setdefault(block.nbytes, [])
            if len(idle) < IDLE_PER_SIZE * max(1, self._per_run.get(block.nbytes, 0)):
                idle.append(block)


class _Lease:
    """The base of an array handed out over a block: gives the block back
    to its pool when the last array over it is gone."""

    def __init__(self, pool: OutputPool, block: np.ndarray, shape: tuple[int, ...],
                 dtype: np.dtype):
        self._pool, self._block = pool, block
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "descr": dtype.descr,
                                    "data": (block.ctypes.data, False), "version": 3}

    def __del__(self):
        self._pool._give_back(self._block)
