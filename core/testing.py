"""Differential testing helpers: any target against the reference
interpreter on the same program and inputs.  Used by the plugins' tests
and the SDK conformance kit."""
from __future__ import annotations

import random
from typing import Mapping

import numpy as np

from .errors import HpvmError
from .interp import Interpreter
from .ir.graph import Graph, Module
from .ir.types import BufferType
from .registry import get_registry
from .runtime import compile
from .tune import space


def random_inputs(graph: Graph, sizes: Mapping[str, int], seed: int = 0) -> dict[str, object]:
    """Inputs for every readable parameter of ``graph``: buffers shaped by
    ``sizes`` (one value per shape symbol), floats in [-1, 1), integers in
    [0, 10), integer scalars named like a size symbol get that size."""
    rng = np.random.default_rng(seed)
    inputs: dict[str, object] = {}
    for p in graph.params:
        if not p.reads:
            continue
        if isinstance(p.type, BufferType):
            shape = p.type.concrete_shape(dict(sizes))
            inputs[p.name] = _random_array(rng, shape, p.type.element.numpy_dtype)
        elif p.name in sizes:
            inputs[p.name] = p.type.numpy_dtype.type(sizes[p.name])
        else:
            inputs[p.name] = _random_array(rng, (), p.type.numpy_dtype)[()]
    return inputs


def _random_array(rng, shape, dtype) -> np.ndarray:
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 10, shape).astype(dtype)


def assert_outputs_close(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                         rtol: float = 1e-5, atol: float = 1e-6, label: str = "") -> None:
    """Every expected output present in ``actual`` with the same shape and
    dtype and values within tolerance."""
    assert set(actual) == set(expected), f"{label}: outputs {sorted(actual)} != {sorted(expected)}"
    for name, want in expected.items():
        got = np.asarray(actual[name])
        assert got.shape == want.shape and got.dtype == want.dtype, (
            f"{label}: output '{name}' is {got.dtype}{list(got.shape)}, "
            f"expected {want.dtype}{list(want.shape)}")
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                   err_msg=f"{label}: output '{name}'")


def stream_inputs(graph: Graph, inputs: Mapping[str, object], count: int
                  ) -> tuple[dict[str, object], list[dict[str, object]]]:
    """``inputs`` split for a streaming ``graph``: the ones fixed at
    ``start`` and ``count`` frames of the streamed ones (frame i adds i, so
    frames differ)."""
    streamed = {b.param for b in graph.bind_ins if b.streaming}
    fixed = {k: v for k, v in inputs.items() if k not in streamed}
    frames = [{k: np.asarray(v) + i for k, v in inputs.items() if k in streamed}
              for i in range(count)]
    return fixed, frames


def run_streaming(exe, module: Module, fixed: dict, frames: list[dict]) -> list[dict]:
    """Push ``frames`` through a streaming executable (or an Interpreter)
    and pop every result."""
    exe.start(**fixed)
    for frame in frames:
        exe.push(**frame)
    results = [exe.pop() for _ in frames]
    exe.close()
    return results


def usable_targets(names=("interp", "cpu", "gpu_opencl")) -> list[str]:
    """Those of ``names`` that are installed and usable on this machine."""
    usable = []
    for name in names:
        try:
            if get_registry().target(name).availability.available:
                usable.append(name)
        except HpvmError:  # not installed
            continue
    return usable


def check_against_interpreter(module: Module, inputs: dict, targets: list[str],
                              frames: list[dict] | None = None, rtol: float = 1e-5,
                              atol: float = 1e-6, options: dict | None = None, registry=None):
    """Compile ``module`` for ``targets``, run it on ``inputs`` (and push
    ``frames`` when it is a streaming program), and assert every output
    matches the reference interpreter.  Returns the Executable."""
    exe = compile(module, targets=targets, options=options, registry=registry)
    reference = Interpreter(module)
    label = f"{module.name} on {','.join(targets)}"
    if frames is None:
        assert_outputs_close(exe(**inputs), reference.run(**inputs), rtol, atol, label)
        return exe
    got = run_streaming(exe, module, inputs, frames)
    want = run_streaming(reference, module, inputs, frames)
    for index, (actual, expected) in enumerate(zip(got, want)):
        assert_outputs_close(actual, expected, rtol, atol, f"{label}, frame {index}")
    return exe


def check_random_designs(module: Module, inputs: dict, expected: Mapping[str, np.ndarray],
                         targets: list[str], rtol: float, atol: float, seed, count: int = 3,
                         options: dict | None = None) -> None:
    """Compile ``count`` random configurations of ``module``'s design space
    on ``targets`` (hpvm.tune.space) and assert that each computes
    ``expected``; ``options`` (target name -> options) join every
    configuration's own."""
    design = space(module, targets)
    chooser = random.Random(seed)
    for _ in range(count):
        values = {p.name: chooser.choice(p.values) for p in design}
        realised = design.realise(values)
        merged = dict(realised.options)
        for target, section in (options or {}).items():
            merged[target] = {**merged.get(target, {}), **section}
        exe = compile(realised.module, design.targets, options=merged)
        assert_outputs_close(exe(**inputs), expected, rtol, atol,
                             f"{module.name} with {design.describe(design.checked(values))}")
