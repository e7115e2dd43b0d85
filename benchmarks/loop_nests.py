# ruff: noqa: F821  (shape symbols such as C, K and OH are names the kernel language binds)
"""Loop nests for benchmarks/loop_nest_bench.py that are not in the suite:
a convolution written as people write one."""
from __future__ import annotations

import hpvm.lang as hl
from hpvm.lang import Buffer, Out, f32, i64, parallel_loop


@hl.program
def conv(x: Buffer[f32, "C", "H", "W"], w: Buffer[f32, "K", "C", "R", "S"],
         y: Out[Buffer[f32, "K", "OH", "OW"]], OH: i64, OW: i64):
    """One image, channels in, taps (no padding, stride 1): every output
    value one instance, its sum over channels and taps in three loops."""
    for k, oh, ow in parallel_loop(K, OH, OW, ins=(x, w), outs=(y,), name="conv"):
        acc: f32 = 0.0
        for c in range(C):
            for r in range(R):
                for s in range(S):
                    acc += w[k, c, r, s] * x[c, oh + r, ow + s]
        y[k, oh, ow] = acc

