"""Edge detection: a 7-node dataflow graph (gaussian blur, sobel-x and
sobel-y in parallel, gradient magnitude, a two-step max reduction,
normalise + threshold).

The program itself lives in core/demo/edge_detection.py, because
`hpvm demo` (the README's first command) ships it; read it there.
Run this file to compile it for the CPU and check it against numpy:

    .venv/bin/python examples/edge_detection.py
"""
import numpy as np

import hpvm
from hpvm.demo.edge_detection import edge_detect, make_inputs, reference

__all__ = ["edge_detect", "make_inputs", "reference"]

if __name__ == "__main__":
    inputs = make_inputs(np.random.default_rng(0))
    result = hpvm.compile(edge_detect, targets=["cpu"])(**inputs)
    expected = reference(inputs)["edges"]
    print("edge pixels:", int(result["edges"].sum()),
          "mismatches:", int((result["edges"] != expected).sum()))
