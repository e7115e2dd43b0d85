"""MachSuite sort/merge: bottom-up merge sort of int32 keys.

MachSuite (Reagen et al., IISWC 2014), kernel ``sort/merge``: for run
width m = 1, 2, 4, ... < N, every pair of adjacent sorted runs of width m
is merged (the last pair may be short), in place through a temporary.

Formulation: each width is a node, and a merge is done per element rather
than per pair of runs, so every element is an instance at every width
(the "merge path" idea of GPU sorts): an element's destination is its
run's start, plus its index in its run, plus the number of elements of
the partner run that precede it (binary search; keys of the left run
precede equal keys of the right run, so the merge is stable, as
MachSuite's).  Nodes ping-pong between ``a`` and a scratch buffer, like
MachSuite's temporary.  A dataflow graph's node count is fixed when the
program is built, so the program unrolls STAGES = 18 widths 1 .. 2^17; it
sorts any N <= 2^18, widths >= N only copying (N need not be a power of
two).  The per-element merge does O(N log^2 N) work against the O(N log N)
of a sequential merge, the price of N-way parallelism at every width.
Sizes: "small" is MachSuite's own (2048 keys), "large" 2^18 keys.
Keys are random int32 over the whole range.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, buffer, i32, i64, parallel_loop

from ..peers import numba_peer
from ..suite import Benchmark

STAGES = 18                 # even, so the sorted keys end in ``a``
SIZES = {"small": 2048, "large": 1 << 18}


@hl.kernel
def merge_destination(keys: Buffer[i32, "N"], i: i64, width: i64) -> i64:
    """Where element i of ``keys`` (runs of ``width`` sorted) lands when
    adjacent runs are merged: a binary search in the partner run."""
    value = keys[i]
    start = i // (2 * width) * (2 * width)
    index = i - start
    in_right = index >= width
    first = min(start + width, N)
    last = min(start + 2 * width, N)
    if in_right:
        index -= width
        first, last = start, start + width
    base = first
    while first < last:
        middle = (first + last) // 2
        probe = keys[middle]
        if probe < value or (in_right and probe == value):
            first = middle + 1
        else:
            last = middle
    return start + index + (first - base)


@hl.program
def ms_sort(a: InOut[Buffer[i32, "N"]]):
    scratch = buffer(i32, ("N",))
    for pair in range(STAGES // 2):
        for i in parallel_loop(N, ins=(a,), outs=(scratch,), name="merge_to_scratch"):
            scratch[merge_destination(a, i, 1 << (2 * pair))] = a[i]
        for i in parallel_loop(N, ins=(scratch,), outs=(a,), name="merge_back"):
            a[merge_destination(scratch, i, 2 << (2 * pair))] = scratch[i]


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    keys, info = SIZES[size], np.iinfo(np.int32)
    if keys > 1 << STAGES:
        raise ValueError(f"sort: {keys} keys need more than the program's {STAGES} merge widths")
    return {"a": rng.integers(info.min, info.max, keys, dtype=np.int32, endpoint=True)}


def reference(inputs: dict) -> dict:
    return {"a": np.sort(inputs["a"])}


@numba.njit(parallel=True)
def _merge_pass(source, target, width):
    """One bottom-up merge pass, the pairs of runs merged in parallel."""
    n = source.size
    for pair in numba.prange((n + 2 * width - 1) // (2 * width)):
        start = pair * 2 * width
        left, middle = start, min(start + width, n)
        right, stop = middle, min(start + 2 * width, n)
        for k in range(start, stop):
            if right < stop and (left >= middle or source[right] < source[left]):
                target[k] = source[right]
                right += 1
            else:
                target[k] = source[left]
                left += 1


def _numba_run(inputs: dict) -> dict:
    source, target = inputs["a"].copy(), np.empty_like(inputs["a"])
    width = 1
    while width < source.size:
        _merge_pass(source, target, width)
        source, target, width = target, source, 2 * width
    return {"a": source}


BENCHMARKS = [Benchmark(
    name="ms_sort", suite="machsuite", program=ms_sort, make_inputs=make_inputs, reference=reference,
    rtol=0, atol=0,   # integer keys: exact
    peers=(numba_peer(_numba_run),),
    description=f"bottom-up merge sort, one node per run width ({STAGES}), one instance per key",
)]
