"""MachSuite nw/nw: Needleman-Wunsch global alignment of two sequences:
the score matrix, the traceback pointers and the aligned strings.

MachSuite (Reagen et al., IISWC 2014), kernel ``nw/nw``: with match +1,
mismatch -1 and gap -1, the score matrix M (borders ``M[0, a] = -a``,
``M[b, 0] = -b``) is filled by

    M[b, a] = max(M[b-1, a-1] + score(SEQA[a-1], SEQB[b-1]),
                  M[b-1, a] - 1, M[b, a-1] - 1)

and ``ptr[b, a]`` records the move: SKIPB '<' if the max came from the
left, else SKIPA '^' if from above, else ALIGN '\\'.  The traceback walks
from (BLEN, ALEN) to (0, 0), writing the aligned sequences backwards ('-'
for a gap), then pads them with '_' to ALEN + BLEN characters.

Formulation (tiled anti-diagonal wavefront): the matrix is cut into
TILES x TILES tiles; tile (tb, ta) needs the tiles above and to its left,
so the tiles of one anti-diagonal ``tb + ta = wave`` are independent.  The
program has one node per anti-diagonal (2 * TILES - 1 nodes), a parallel
loop over the TILES tiles of that wave (those off the matrix do nothing),
each instance filling its tile row by row as MachSuite does.  The
traceback is a sequential node.  Both lengths must be multiples of TILES.

Deviations: ``M`` and ``ptr`` hold only the interior (rows b = 1..BLEN,
columns a = 1..ALEN, stored at [b-1, a-1]); the borders are the formula
above.  On the borders the traceback moves along the border (MachSuite
reads its never-written border pointers there).  The aligned strings'
length ALEN + BLEN is passed as the scalar ``ALIGNED`` (an output's shape
must come from an input).  Sizes: "small" is 64 x 64 (MachSuite's 128 x
128 takes the reference interpreter ~3 s), "large" 4096 x 4096.
Sequences are random over 'ACGT' as int8 codes.

The numba peer is the same tiled wavefront (tiles of a wave in a prange)
and the same sequential traceback.
"""
from __future__ import annotations

import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, i8, i32, i64, parallel_loop, task

from ..peers import numba_peer
from ..suite import Benchmark

MATCH, MISMATCH, GAP = 1, -1, -1
ALIGN, SKIPA, SKIPB = ord("\\"), ord("^"), ord("<")
DASH, PAD = ord("-"), ord("_")
TILES = 8
SIZES = {"small": (64, 64), "large": (4096, 4096)}   # (ALEN, BLEN)


@hl.kernel
def score_at(M: Buffer[i32, "BLEN", "ALEN"], b: i64, a: i64) -> i32:
    """MachSuite's M[b + 1, a + 1]: the stored interior, or the border."""
    value: i32 = 0
    if b < 0:
        value = i32((a + 1) * GAP)
    elif a < 0:
        value = i32((b + 1) * GAP)
    else:
        value = M[b, a]
    return value


@hl.kernel
def fill_tile(SEQA: Buffer[i8, "ALEN"], SEQB: Buffer[i8, "BLEN"], M: Buffer[i32, "BLEN", "ALEN"],
              ptr: Buffer[i8, "BLEN", "ALEN"], tb: i64, ta: i64):
    """Fill tile (tb, ta) of M and ptr, row by row."""
    rows, cols = BLEN // TILES, ALEN // TILES
    for b in range(tb * rows, (tb + 1) * rows):
        for a in range(ta * cols, (ta + 1) * cols):
            score = MATCH if SEQA[a] == SEQB[b] else MISMATCH
            up_left = score_at(M, b - 1, a - 1) + score
            up = score_at(M, b - 1, a) + GAP
            left = score_at(M, b, a - 1) + GAP
            best = max(up_left, up, left)
            M[b, a] = best
            if best == left:
                ptr[b, a] = SKIPB
            elif best == up:
                ptr[b, a] = SKIPA
            else:
                ptr[b, a] = ALIGN


@hl.program
def ms_nw(SEQA: Buffer[i8, "ALEN"], SEQB: Buffer[i8, "BLEN"], ALIGNED: i64,
          M: Out[Buffer[i32, "BLEN", "ALEN"]], ptr: Out[Buffer[i8, "BLEN", "ALEN"]],
          alignedA: Out[Buffer[i8, "ALIGNED"]], alignedB: Out[Buffer[i8, "ALIGNED"]]):
    for wave in range(2 * TILES - 1):
        for tb in parallel_loop(TILES, ins=(SEQA, SEQB), outs=(M, ptr), name="fill_wave"):
            ta = wave - tb
            if 0 <= ta < TILES:
                fill_tile(SEQA, SEQB, M, ptr, tb, ta)
    with task(ins=(SEQA, SEQB, ptr), outs=(alignedA, alignedB), name="traceback"):
        a, b, k = ALEN, BLEN, 0
        while a > 0 or b > 0:
            move: i8 = SKIPA
            if b == 0:
                move = SKIPB
            elif a > 0:
                move = ptr[b - 1, a - 1]
            if move == ALIGN:
                alignedA[k] = SEQA[a - 1]
                alignedB[k] = SEQB[b - 1]
                a -= 1
                b -= 1
            elif move == SKIPB:
                alignedA[k] = SEQA[a - 1]
                alignedB[k] = DASH
                a -= 1
            else:
                alignedA[k] = DASH
                alignedB[k] = SEQB[b - 1]
                b -= 1
            k += 1
        while k < ALIGNED:
            alignedA[k] = PAD
            alignedB[k] = PAD
            k += 1


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    alen, blen = SIZES[size]
    if alen % TILES or blen % TILES:
        raise ValueError(f"nw: sequence lengths {alen}, {blen} must be multiples of TILES = {TILES}")
    letters = np.frombuffer(b"ACGT", dtype=np.int8)
    return {"SEQA": rng.choice(letters, alen), "SEQB": rng.choice(letters, blen),
            "ALIGNED": alen + blen}


def fill_reference(seq_a: np.ndarray, seq_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The full (BLEN + 1) x (ALEN + 1) score and pointer matrices, one
    anti-diagonal at a time."""
    alen, blen = seq_a.size, seq_b.size
    scores = np.zeros((blen + 1, alen + 1), dtype=np.int32)
    scores[0, :] = np.arange(alen + 1) * GAP
    scores[:, 0] = np.arange(blen + 1) * GAP
    moves = np.zeros_like(scores, dtype=np.int8)
    moves[0, 1:], moves[1:, 0] = SKIPB, SKIPA
    for wave in range(2, alen + blen + 1):
        b = np.arange(max(1, wave - alen), min(blen, wave - 1) + 1)
        a = wave - b
        up_left = scores[b - 1, a - 1] + np.where(seq_a[a - 1] == seq_b[b - 1], MATCH, MISMATCH)
        up, left = scores[b - 1, a] + GAP, scores[b, a - 1] + GAP
        best = np.maximum(up_left, np.maximum(up, left))
        scores[b, a] = best
        moves[b, a] = np.where(best == left, SKIPB, np.where(best == up, SKIPA, ALIGN))
    return scores, moves


def traceback_reference(seq_a, seq_b, moves) -> tuple[np.ndarray, np.ndarray]:
    aligned_a, aligned_b = [], []
    a, b = seq_a.size, seq_b.size
    while a > 0 or b > 0:
        move = moves[b, a]
        aligned_a.append(seq_a[a - 1] if move != SKIPA else DASH)
        aligned_b.append(seq_b[b - 1] if move != SKIPB else DASH)
        a -= move != SKIPA
        b -= move != SKIPB
    length = seq_a.size + seq_b.size
    pad = [PAD] * (length - len(aligned_a))
    return np.array(aligned_a + pad, dtype=np.int8), np.array(aligned_b + pad, dtype=np.int8)


def reference(inputs: dict) -> dict:
    scores, moves = fill_reference(inputs["SEQA"], inputs["SEQB"])
    aligned_a, aligned_b = traceback_reference(inputs["SEQA"], inputs["SEQB"], moves)
    return {"M": scores[1:, 1:], "ptr": moves[1:, 1:], "alignedA": aligned_a, "alignedB": aligned_b}


@numba.njit(parallel=True)
def _nw_numba(seq_a, seq_b):
    alen, blen = seq_a.size, seq_b.size
    scores = np.zeros((blen + 1, alen + 1), dtype=np.int32)
    moves = np.zeros((blen + 1, alen + 1), dtype=np.int8)
    for a in range(alen + 1):
        scores[0, a], moves[0, a] = a * GAP, SKIPB
    for b in range(blen + 1):
        scores[b, 0], moves[b, 0] = b * GAP, SKIPA
    rows, cols = blen // TILES, alen // TILES
    for wave in range(2 * TILES - 1):
        for tb in numba.prange(TILES):
            ta = wave - tb
            if 0 <= ta < TILES:
                for b in range(tb * rows + 1, (tb + 1) * rows + 1):
                    for a in range(ta * cols + 1, (ta + 1) * cols + 1):
                        score = MATCH if seq_a[a - 1] == seq_b[b - 1] else MISMATCH
                        up_left = scores[b - 1, a - 1] + score
                        up, left = scores[b - 1, a] + GAP, scores[b, a - 1] + GAP
                        best = max(up_left, up, left)
                        scores[b, a] = best
                        moves[b, a] = SKIPB if best == left else (SKIPA if best == up else ALIGN)
    aligned_a = np.full(alen + blen, PAD, dtype=np.int8)
    aligned_b = np.full(alen + blen, PAD, dtype=np.int8)
    a, b, k = alen, blen, 0
    while a > 0 or b > 0:
        move = moves[b, a]
        aligned_a[k] = seq_a[a - 1] if move != SKIPA else DASH
        aligned_b[k] = seq_b[b - 1] if move != SKIPB else DASH
        a -= move != SKIPA
        b -= move != SKIPB
        k += 1
    return scores[1:, 1:].copy(), moves[1:, 1:].copy(), aligned_a, aligned_b


def _numba_run(inputs: dict) -> dict:
    return dict(zip(("M", "ptr", "alignedA", "alignedB"), _nw_numba(inputs["SEQA"], inputs["SEQB"])))


BENCHMARKS = [Benchmark(
    name="ms_nw", suite="machsuite", program=ms_nw, make_inputs=make_inputs, reference=reference,
    rtol=0, atol=0,   # integer scores and characters: exact
    peers=(numba_peer(_numba_run),),
    description=f"Needleman-Wunsch, {2 * TILES - 1} anti-diagonal waves of {TILES}x{TILES} tiles "
                "and a sequential traceback",
)]
