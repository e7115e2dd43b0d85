"""Host arrays placed for the vector units, for the buffers the runtime
makes (arena buffers, outputs, their pool's blocks): large ones start on
a cache line, successive ones at different offsets into their pages.

numpy's arrays start wherever malloc puts them: 16 bytes into a page when
malloc maps them afresh, anywhere 16-aligned when it serves them from its
heap, as it does once a process has freed large arrays.  Two things then
cost a memory-bound node dearly, depending on where its buffers lie in the
low 12 bits of their addresses:

- vector loads split across cache lines, and the core matches loads
  against pending stores on those bits: blur's vertical pass, one thread,
  2048x2048 f32, took 1.55 ms with both arrays page-aligned and 3.4-3.8 ms
  with its input 16 bytes past a 32-byte boundary and its output 16 or 32
  bytes above it modulo 4096, which heap placement produced;
- streams at the same offset into their pages share the L1 cache's sets
  (4 KiB per way).

So a buffer of MIN_BYTES or more starts on a cache line (no split
loads), at an offset into its page that moves by STAGGER for every buffer
made.  Measured on the lent
16-core Xeon (Emerald Rapids), whole calls as written, malloc's placement
against this one: blur 5.3-6.3 -> 3.7-4.2 ms on one thread and 0.56-1.35
-> 0.32-0.44 ms on 16; edge 17.8-19.8 -> 13.6-15.4 and 1.76-1.96 ->
1.14-1.36 ms.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

LINE = 64
"""Bytes in a cache line: every array of MIN_BYTES or more starts on one."""
PAGE = 4096
STAGGER = 7 * LINE
"""How far into its page each new buffer starts past the last one's
offset (modulo PAGE): 7 is prime to the 64 lines of a page, so 64 buffers
in a row start on 64 different lines."""
MIN_BYTES = 64 << 10
"""Smaller arrays come from numpy as they are: they sit in the caches, and
placing one costs about 2.5 us more than numpy's allocation (getting the
pointer, a second ndarray), which a small node's run would feel."""

_made = itertools.count()


def aligned_empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """As ``np.empty``, placed as this module says when MIN_BYTES or more."""
    return _placed(shape, dtype, np.empty)


def aligned_zeros(shape: tuple[int, ...], dtype) -> np.ndarray:
    """As ``np.zeros`` (fresh memory comes zeroed from the OS, untouched),
    placed as this module says when MIN_BYTES or more."""
    return _placed(shape, dtype, np.zeros)


def _placed(shape: tuple[int, ...], dtype, make) -> np.ndarray:
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    if size < MIN_BYTES:
        return make(shape, dtype)
    raw = make(size + 2 * PAGE, np.uint8)
    start = -raw.ctypes.data % PAGE + next(_made) * STAGGER % PAGE
    return np.ndarray(shape, dtype, buffer=raw, offset=start)
