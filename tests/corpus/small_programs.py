"""Small programs of the differential corpus, each next to its numpy
reference.  Each exercises one feature of the kernel language."""
import math

import numpy as np

import hpvm.lang as hl
from hpvm.lang import (
    Buffer, InOut, atomic_add, buffer, f32, i32, i64, loop, parallel_loop, private_array, task,
)

TAPS = (0.1, 0.2, 0.4, 0.2, 0.1)


@hl.program
def saxpy(x: Buffer[f32, "N"], y: Buffer[f32, "N"], out: Buffer[f32, "N"], a: f32):
    for i in parallel_loop(N, ins=(x, y), outs=(out,)):
        out[i] = a * x[i] + y[i]


def saxpy_ref(v):
    return {"out": v["a"] * v["x"] + v["y"]}


@hl.program
def histogram(values: Buffer[i32, "N"], counts: Buffer[i32, 16]):
    for i in parallel_loop(N, ins=(values,), outs=(counts,), name="count"):
        atomic_add(counts[values[i] % 16], 1)


def histogram_ref(v):
    return {"counts": np.bincount(v["values"] % 16, minlength=16).astype(np.int32)}


@hl.program
def c_division(a: Buffer[i32, "N"], b: Buffer[i32, "N"], q: Buffer[i32, "N"], r: Buffer[i32, "N"]):
    for i in parallel_loop(N, ins=(a, b), outs=(q, r)):
        q[i] = a[i] // b[i]        # truncates toward zero, as in C
        r[i] = a[i] % b[i]


def c_division_ref(v):
    a, b = v["a"].astype(np.int64), v["b"].astype(np.int64)
    q = np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))
    return {"q": q.astype(np.int32), "r": (a - q * b).astype(np.int32)}


@hl.program
def collatz(start: Buffer[i64, "N"], steps: Buffer[i32, "N"]):
    for i in parallel_loop(N, ins=(start,), outs=(steps,)):
        n = start[i]
        count: i32 = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            count += 1
        steps[i] = count


def collatz_ref(v):
    def steps(n):
        count = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            count += 1
        return count
    return {"steps": np.array([steps(int(n)) for n in v["start"]], dtype=np.int32)}


@hl.program
def fir5(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
    for i in parallel_loop(N, ins=(x,), outs=(y,), name="fir"):
        window = private_array(f32, (5,))
        for t in range(5):
            j = min(max(i + t - 2, 0), N - 1)
            window[t] = x[j]
        acc = 0.0
        for t in range(5):
            acc += window[t] * weight(t)
        y[i] = acc


@hl.kernel
def weight(t: i64) -> f32:
    """A helper returning from both branches of a final if."""
    if t == 2:
        return 0.4
    elif t == 1 or t == 3:
        return 0.2
    else:
        return 0.1


def fir5_ref(v):
    x = v["x"]
    p = np.pad(x, 2, mode="edge")
    taps = np.array(TAPS, dtype=np.float32)
    return {"y": sum(taps[t] * p[t:t + len(x)] for t in range(5))}


@hl.program
def fork_join(x: Buffer[f32, "N"], out: Buffer[f32, "N"]):
    sq = buffer(f32, ("N",))
    ex = buffer(f32, ("N",))
    for i in parallel_loop(N, ins=(x,), outs=(sq,), name="square"):
        sq[i] = x[i] * x[i]
    for i in parallel_loop(N, ins=(x,), outs=(ex,), name="exponential"):
        ex[i] = math.exp(-abs(x[i]))
    for i in parallel_loop(N, ins=(x, sq, ex), outs=(out,), name="join"):
        out[i] = math.log(1 + sq[i]) + math.tanh(ex[i]) + math.floor(x[i]) + x[i] ** 3


def fork_join_ref(v):
    x = v["x"]
    return {"out": np.log1p(x * x) + np.tanh(np.exp(-np.abs(x))) + np.floor(x) + x ** 3}


@hl.program
def prefix_sum(x: Buffer[i64, "N"], sums: Buffer[i64, "N"]):
    with task(ins=(x,), outs=(sums,), name="scan"):
        running = 0
        for i in loop(0, N, trip_count=64):
            running += x[i]
            sums[i] = running


def prefix_sum_ref(v):
    return {"sums": np.cumsum(v["x"])}


@hl.program
def jacobi(grid: InOut[Buffer[f32, "N"]]):
    tmp = buffer(f32, ("N",))
    for step in range(3):          # unrolled at compile time: 6 nodes
        for i in parallel_loop(N, ins=(grid,), outs=(tmp,), name="smooth"):
            if 0 < i < N - 1:
                tmp[i] = (grid[i - 1] + grid[i] + grid[i + 1]) / 3
            else:
                tmp[i] = grid[i]
        for i in parallel_loop(N, ins=(tmp,), outs=(grid,), name="copy"):
            grid[i] = tmp[i] + step * 0


def jacobi_ref(v):
    g = v["grid"].copy()
    for _ in range(3):
        t = g.copy()
        t[1:-1] = (g[:-2] + g[1:-1] + g[2:]) / np.float32(3)
        g = t
    return {"grid": g}


@hl.program
def volume(v: Buffer[f32, "D", "H", "W"], out: Buffer[f32, "D", "H", "W"]):
    for z, y, x in parallel_loop(D, H, W, ins=(v,), outs=(out,), name="flip"):
        total = 0.0
        for k in range(W - 1, -1, -2):     # negative step
            total += v[z, y, k]
        out[z, y, x] = v[D - 1 - z, y, x] + total


def volume_ref(v):
    a = v["v"]
    return {"out": a[::-1] + a[:, :, ::-2].sum(axis=2, keepdims=True)}


@hl.program
def reduce_sum(x: Buffer[i32, "N"]):
    total = buffer(i64, (1,))
    for i in parallel_loop(N, ins=(x,), outs=(total,), name="accumulate"):
        atomic_add(total[0], i64(x[i]))
    return total


def reduce_sum_ref(v):
    return {"total": np.array([v["x"].astype(np.int64).sum()])}
