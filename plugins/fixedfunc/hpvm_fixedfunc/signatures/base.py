"""What an accelerator signature is: patterns, a binding rule, conventions,
probe inputs and the accelerator's function.

A kernel is claimed for an accelerator in three steps, each of which may
refuse it with a reason the placement report shows:

1. **structure**: one of the signature's pattern sets (hpvm.passes.pdg_match
   patterns, all of which must be found in the kernel's PDG) occurs;
2. **binding** (:meth:`Signature.bind`): the occurrence's loads and stores
   name the kernel parameters that play the accelerator's roles (input
   signal, twiddles, output ...), with the ranks and element types the
   accelerator takes;
3. **probe** (hpvm_fixedfunc.probe): the kernel, run by the reference
   interpreter on small inputs the signature makes, computes what the
   accelerator computes in one of the signature's conventions (natural or
   bit-reversed order, transposed operands ...); that convention is the
   one the accelerator then runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpvm.ir.types import BufferType
from hpvm.passes.pdg import ProgramDependenceGraph
from hpvm.passes.pdg_match import Pattern


@dataclass(frozen=True)
class Binding:
    """Which kernel buffer plays each role: ``reads`` (role -> parameter
    read by the kernel) and ``writes`` (role -> parameter written)."""

    reads: dict[str, str]
    writes: dict[str, str]

    @property
    def parameters(self) -> set[str]:
        return set(self.reads.values()) | set(self.writes.values())


class Refusal(Exception):
    """A signature's step refused a kernel; the message says why."""


class Signature:
    """An accelerator's signature: ``name``, ``description`` and
    ``pattern_sets``, (form, patterns) pairs: every pattern of one set must
    occur.  Subclasses give the methods below."""

    chains: bool = False
    """True when consecutive nodes that each match form one instance (the
    stages of an FFT, one node each)."""

    def __init__(self, name: str, description: str, pattern_sets: list[tuple[str, list[Pattern]]]):
        self.name = name
        self.description = description
        self.pattern_sets = pattern_sets

    def bind(self, pdg: ProgramDependenceGraph, occurrences: list[dict[str, int]],
             types: dict[str, BufferType]) -> Binding:
        """The roles of the kernel's buffers, from the patterns'
        ``occurrences`` (one {role: PDG node} per pattern of the set);
        Refusal when they do not fit the accelerator."""
        raise NotImplementedError

    def conventions(self, binding: Binding, types: dict[str, BufferType]) -> list[dict]:
        """The conventions to try, first match wins (JSON-able dicts)."""
        return [{}]

    def probe_inputs(self, binding: Binding, types: dict[str, BufferType], rng: np.random.Generator,
                     scale: int, limits: dict) -> dict[str, np.ndarray]:
        """Inputs by role for a probe run; ``scale`` 0 is the small probe,
        1 a larger one, within ``limits`` (:meth:`chain_limits`).  Refusal
        when the declared shapes cannot be given sizes the accelerator
        takes."""
        raise NotImplementedError

    def probe_symbols(self, binding: Binding, types: dict[str, BufferType],
                      inputs: dict[str, np.ndarray]) -> dict[str, int]:
        """Values of shape symbols for a probe on ``inputs`` (so a kernel's
        integer parameter named like a symbol, an output's length, can be
        given); default: those the inputs' shapes bind."""
        values = {}
        for role, value in inputs.items():
            for dim, size in zip(types[binding.reads[role]].shape or (), np.shape(value)):
                if isinstance(dim, str):
                    values.setdefault(dim, int(size))
        return values

    def run(self, convention: dict, inputs: dict[str, Any], backend) -> dict[str, Any]:
        """The accelerator: results by role written, from ``inputs`` by
        role read, on ``backend`` (hpvm_fixedfunc.backends)."""
        raise NotImplementedError

    def prepare(self, convention: dict, inputs: dict[str, np.ndarray]) -> dict:
        """The convention for a run on ``inputs`` (host arrays by role),
        with what the inputs decide (the FFT's direction from its twiddle
        tables); Refusal saying why the accelerator cannot run them."""
        return convention

    def chain_limits(self, stages: int) -> dict:
        """What a chain of ``stages`` nodes adds to the convention (for
        signatures with ``chains``)."""
        return {}


def array_of(pdg: ProgramDependenceGraph, node: int) -> str:
    """The buffer a load or store node reads or writes."""
    return pdg.facts(node)["array"]


def symbol_sizes(types: dict[str, BufferType], wanted: dict[str, tuple]) -> dict[str, tuple[int, ...]]:
    """Shapes for ``types`` (role -> declared type) from ``wanted`` (role
    -> desired shape): each shape symbol takes the first size asked of it,
    so roles sharing a symbol get equal sizes, and a fixed dimension keeps
    its declared size; Refusal when a role has no declared shape or its
    rank differs from the wanted one."""
    values: dict[str, int] = {}
    shapes = {}
    for role, shape in wanted.items():
        declared = types[role].shape
        if declared is None:
            raise Refusal(f"'{role}' has no declared shape; declare it, e.g. f64[N]")
        if len(declared) != len(shape):
            raise Refusal(f"'{role}' has rank {len(declared)}, the accelerator takes rank {len(shape)}")
        for dim, size in zip(declared, shape):
            if isinstance(dim, str):
                values.setdefault(dim, size)
    for role, declared in ((r, types[r].shape) for r in wanted):
        shapes[role] = tuple(values[d] if isinstance(d, str) else int(d) for d in declared)
    return shapes


def require_floats(types: dict[str, BufferType], names: dict[str, str]) -> None:
    """Refusal unless every buffer of ``names`` (role -> buffer) holds floats."""
    for role, name in names.items():
        if not types[name].element.is_float:
            raise Refusal(f"'{name}' ({role}) holds {types[name].element}, not floats")


def same_values(expected, actual, tolerance: float) -> bool:
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return False
    if np.issubdtype(actual.dtype, np.floating):
        scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
        return bool(np.allclose(actual, expected, rtol=tolerance, atol=tolerance * scale))
    return bool(np.array_equal(actual, expected))
