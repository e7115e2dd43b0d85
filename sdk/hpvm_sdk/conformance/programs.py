"""The programs of the conformance battery, shipped inside hpvm-sdk.

``EXAMPLES`` are the example modules of the hpvm repository
(examples/ir/*.hpvm); ``CORPUS`` is the differential corpus: small programs
that each exercise one corner of the kernel language (atomics, C division,
while loops, private and local arrays with a barrier, casts between every
width, 3-d replication, in-place updates, deep hierarchies).  Both are
``.hpvm`` text files under ``programs/`` (package data), so the battery runs
from an installed hpvm-sdk without the repository::

    from hpvm_sdk.conformance.programs import CORPUS
    program = CORPUS[0]
    module = program.load()
    inputs = program.inputs(seed=0)     # dict of numpy values
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from typing import Callable

import numpy as np

DEFAULT_SIZES = {"H": 13, "W": 17, "N": 16, "M": 9, "K": 11, "G": 4, "R": 5, "C": 3,
                 "D": 3}
"""One value per shape symbol used by the programs."""

InputOverride = Callable[[np.random.Generator, dict], dict]
"""``override(rng, inputs) -> dict``: replaces some random inputs with values
the program needs (non-zero divisors, positive starts ...)."""


@dataclass(frozen=True)
class ConformanceProgram:
    """One program of the battery.

    ``group`` is its folder under programs/ (``examples`` or ``corpus``);
    ``override`` adjusts the random inputs; ``rtol``/``atol`` are the float
    tolerances against the interpreter (integers compare exactly)."""

    name: str
    group: str
    sizes: dict = field(default_factory=lambda: dict(DEFAULT_SIZES))
    override: InputOverride | None = None
    rtol: float = 1e-4
    atol: float = 1e-5
    frames: int = 6
    """Frames pushed through a streaming program."""

    @property
    def resource(self):
        return files(__package__) / "programs" / self.group / f"{self.name}.hpvm"

    def text(self) -> str:
        return self.resource.read_text()

    def load(self):
        """The program as a fresh :class:`hpvm.ir.Module`."""
        return _parse(self.group, self.name, self.text())

    def inputs(self, seed: int = 0) -> dict:
        """Random inputs for every readable root parameter."""
        from hpvm.testing import random_inputs
        module = self.load()
        inputs = random_inputs(module.root_graph, self.sizes, seed)
        if self.override is not None:
            inputs.update(self.override(np.random.default_rng(seed), inputs))
        return inputs

    def streamed_params(self) -> set[str]:
        """Root parameters fed or produced frame by frame (empty if none)."""
        graph = self.load().root_graph
        return {b.param for b in graph.bind_ins if b.streaming}

    def is_streaming(self) -> bool:
        return self.load().root_graph.is_streaming

    def __str__(self) -> str:
        return self.name


@lru_cache(maxsize=None)
def _parse(group: str, name: str, text: str):
    # Modules are immutable dataclasses, so tests may share one parse.
    from hpvm.ir.text import parse_module
    return parse_module(text, filename=f"{group}/{name}.hpvm")


def _nonzero_divisors(rng, inputs):
    a = rng.integers(-100, 100, inputs["a"].shape).astype(np.int32)
    b = rng.integers(-9, 9, inputs["b"].shape).astype(np.int32)
    b[b == 0] = 3
    return {"a": a, "b": b}


def _collatz_starts(rng, inputs):
    return {"start": rng.integers(1, 200, inputs["start"].shape).astype(np.int64)}


def _wide_histogram(rng, inputs):
    return {"values": rng.integers(0, 1000, inputs["values"].shape).astype(np.int32)}


def _signed_integers(rng, inputs):
    return {"a": rng.integers(-1000, 1000, inputs["a"].shape).astype(np.int32),
            "small": rng.integers(0, 256, inputs["small"].shape).astype(np.uint8)}


EXAMPLES: tuple[ConformanceProgram, ...] = (
    ConformanceProgram("matmul", "examples"),
    ConformanceProgram("blur", "examples"),
    ConformanceProgram("hierarchy", "examples", sizes={"N": 3}),
    ConformanceProgram("lenet_tiny", "examples", sizes={"N": 3}),
    ConformanceProgram("pipeline", "examples", sizes={"N": 33}),
)
"""The repository's examples/ir modules (copies kept identical by a test)."""

CORPUS: tuple[ConformanceProgram, ...] = (
    ConformanceProgram("saxpy", "corpus"),
    ConformanceProgram("histogram", "corpus", sizes={"N": 200}, override=_wide_histogram),
    ConformanceProgram("c_division", "corpus", sizes={"N": 50}, override=_nonzero_divisors),
    ConformanceProgram("collatz", "corpus", sizes={"N": 30}, override=_collatz_starts),
    ConformanceProgram("fir5", "corpus", sizes={"N": 40}),
    ConformanceProgram("fork_join", "corpus", sizes={"N": 40}),
    ConformanceProgram("prefix_sum", "corpus", sizes={"N": 64}),
    ConformanceProgram("jacobi", "corpus", sizes={"N": 20}),
    ConformanceProgram("volume", "corpus", sizes={"D": 3, "H": 4, "W": 5}),
    ConformanceProgram("reduce_sum", "corpus", sizes={"N": 100}),
    ConformanceProgram("workgroup_sum", "corpus", sizes={"N": 16, "G": 4}),
    ConformanceProgram("mixed_types", "corpus", sizes={"N": 24}, override=_signed_integers,
                       rtol=2e-3, atol=2e-3),
    ConformanceProgram("tiled_matmul", "corpus", sizes={"R": 5, "C": 3}),
)
"""The differential corpus: every target must compute what the interpreter
computes on these."""


def by_name(name: str) -> ConformanceProgram:
    """The example or corpus program called ``name``."""
    for program in EXAMPLES + CORPUS:
        if program.name == name:
            return program
    known = ", ".join(p.name for p in EXAMPLES + CORPUS)
    raise LookupError(f"no conformance program '{name}'; the programs are {known}")
