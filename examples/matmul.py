"""Matrix multiply, written like the HeteroC++ example of the HPVM paper:
a parallel loop over i and j (one node instance per output element) whose
body runs a sequential loop over k.

    python examples/matmul.py
    hpvm compile examples/matmul.py:matmul --emit ir -o matmul.hpvm
"""
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, f32, parallel_loop


@hl.program
def matmul(A: Buffer[f32, "M", "K"], B: Buffer[f32, "K", "N"], C: Buffer[f32, "M", "N"]):
    for i, j in parallel_loop(M, N, ins=(A, B), outs=(C,), name="matmul", hint="gpu"):
        acc = 0.0                      # takes f32 from the first value added to it
        for k in range(K):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def make_inputs(rng):
    return {"A": rng.standard_normal((24, 16), dtype=np.float32),
            "B": rng.standard_normal((16, 20), dtype=np.float32)}


def reference(inputs):
    return {"C": inputs["A"] @ inputs["B"]}


if __name__ == "__main__":
    inputs = make_inputs(np.random.default_rng(0))
    result = matmul.run(**inputs)
    print("max error vs numpy:", np.abs(result["C"] - reference(inputs)["C"]).max())
