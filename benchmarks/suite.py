"""The benchmark suite's registry: one :class:`Benchmark` per program.

A benchmark is an hpvm program written with the front end (no
target-specific code), an input generator at two sizes, a numpy reference
and optional peers: other implementations of the same computation measured
in the same run (numba, Halide, hand-written OpenCL).

    from benchmarks.suite import all_benchmarks, get
    for bench in all_benchmarks():
        inputs = bench.make_inputs("small", np.random.default_rng(0))
        expected = bench.reference(inputs)        # numpy, independent of hpvm
        module = bench.program.build()            # or hpvm.compile(bench.program, ...)

Each module in benchmarks/programs/ defines ``BENCHMARKS``, a list of
Benchmark objects; they are collected here in the order of PROGRAM_MODULES.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

SIZES = ("small", "large")
SUITES = ("parboil", "rodinia", "machsuite", "image", "audio")

Inputs = dict[str, Any]
Outputs = dict[str, np.ndarray]


@dataclass(frozen=True)
class Peer:
    """Another implementation of a benchmark.  ``prepare(inputs)`` does the
    untimed set-up (JIT compiles, builds, device allocations) and returns
    the timed callable ``run() -> outputs``; ``available()`` returns None
    when the peer can run here, else the reason it cannot (a missing
    package, no OpenCL device)."""
    name: str
    prepare: Callable[[Inputs], Callable[[], Outputs]]
    available: Callable[[], str | None] = lambda: None
    targets: tuple[str, ...] = ()
    """The hpvm targets this peer is compared with ("" = every target)."""
    prepare_kernels: Callable[[Inputs], Callable[[], None]] | None = None
    """Where the peer runs on a device: like ``prepare``, but the timed
    callable only runs its kernels, on inputs copied there once, and waits
    for them (benchmarks/roofline_bench.py)."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    suite: str
    program: Any
    """The @hpvm.program function (or anything with .build() -> Module)."""
    make_inputs: Callable[[str, np.random.Generator], Inputs]
    """Inputs by root-graph parameter name for size "small" or "large"."""
    reference: Callable[[Inputs], Outputs]
    """numpy: the expected outputs by parameter name."""
    rtol: float = 1e-5
    atol: float = 1e-5
    peers: tuple[Peer, ...] = field(default=())
    description: str = ""

    def build(self):
        return self.program.build()


PROGRAM_MODULES = (
    # Parboil
    "sgemm", "stencil", "spmv", "mriq",
    # Rodinia
    "bfs", "backprop", "srad", "cfd",
    # MachSuite
    "ms_gemm", "ms_stencil2d", "ms_stencil3d", "ms_spmv_crs", "ms_spmv_ellpack",
    "ms_nw", "ms_md_knn", "ms_fft", "ms_viterbi", "ms_sort",
    # image and audio
    "blur", "edge", "camera", "ambisonic",
)


def all_benchmarks() -> list[Benchmark]:
    """Every benchmark whose module exists, in PROGRAM_MODULES order."""
    found = []
    for module_name in PROGRAM_MODULES:
        try:
            module = importlib.import_module(f"benchmarks.programs.{module_name}")
        except ModuleNotFoundError as error:
            if error.name != f"benchmarks.programs.{module_name}":
                raise
            continue
        found.extend(module.BENCHMARKS)
    return found


def get(name: str) -> Benchmark:
    """The benchmark called ``name``; an unknown name lists the known ones."""
    benchmarks = {b.name: b for b in all_benchmarks()}
    if name not in benchmarks:
        raise KeyError(f"no benchmark {name!r}; the benchmarks are {', '.join(benchmarks)}")
    return benchmarks[name]
