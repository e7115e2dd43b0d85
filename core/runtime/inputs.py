"""Checking a program's inputs against its root graph before anything runs."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import Diagnostic, ExecutionError, Location
from ..ir.graph import Graph
from ..ir.shapes import bind_symbols
from .memory import Value


def validate_inputs(graph: Graph, inputs: Mapping[str, Any],
                    required: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``inputs`` checked and normalised: arrays of the declared dtype and
    rank, scalars as numpy scalars of the declared type.  ``required``
    limits the check to some parameters (streaming frames)."""
    expected = [p for p in graph.params if p.reads and (required is None or p.name in required)]
    names = {p.name for p in expected}
    problems = []
    unknown = sorted(set(inputs) - names)
    if unknown:
        problems.append(Diagnostic(Location(graph=graph.name),
                                   f"unknown input(s) {unknown}; the inputs are {sorted(names)}",
                                   "pass only the program's input parameters"))
    missing = [p.name for p in expected if p.name not in inputs]
    if missing:
        problems.append(Diagnostic(Location(graph=graph.name), f"missing input(s) {missing}",
                                   "pass a value for every input parameter"))
    normalised: dict[str, Any] = {}
    for p in expected:
        if p.name not in inputs:
            continue
        where = Location(graph=graph.name, port=p.name)
        value = inputs[p.name]
        if p.is_buffer and isinstance(value, Value):  # staged by Executable.stage
            if value.dtype != p.type.element.numpy_dtype:
                problems.append(Diagnostic(where, f"expects dtype {p.type.element.numpy_dtype} "
                                           f"({p.type}), got a staged {value.dtype}",
                                           "stage an array of the declared type"))
            normalised[p.name] = value
        elif p.is_buffer:
            array = host_array(value, where)
            if isinstance(array, Diagnostic):
                problems.append(array)
                continue
            dtype = p.type.element.numpy_dtype
            if array.dtype != dtype:
                problems.append(Diagnostic(where, f"expects dtype {dtype} ({p.type}), got {array.dtype}",
                                           f"convert it with .astype(np.{dtype.name})"))
                continue
            if not (array.flags.c_contiguous and array.flags.writeable):
                array = np.array(array, order="C")   # targets take dense, owned buffers
            normalised[p.name] = array
        else:
            if np.ndim(value) != 0:
                problems.append(Diagnostic(where, f"expects a scalar {p.type}, got shape {np.shape(value)}",
                                           "pass a single number"))
                continue
            normalised[p.name] = p.type.numpy_dtype.type(value)
    if problems:
        raise ExecutionError(problems)
    bind_symbols(tuple(p for p in expected if p.name in normalised), normalised,
                 Location(graph=graph.name))
    return normalised


DLPACK_CPU = 1
"""The DLPack device type (DLDeviceType) of host memory, which numpy reads."""
DLPACK_DEVICES = {2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 9: "VPI", 10: "ROCm",
                  11: "ROCm host", 12: "an external device", 13: "CUDA managed", 14: "oneAPI",
                  15: "WebGPU", 16: "Hexagon"}


def host_array(value, where: Location) -> np.ndarray | Diagnostic:
    """``value`` (the input at ``where``) as a numpy array over the same
    memory (numpy, and through DLPack any array in host memory: PyTorch,
    JAX, CuPy's pinned arrays ...); otherwise a Diagnostic saying why not
    and what to do."""
    if isinstance(value, np.ndarray):
        return value
    try:
        if hasattr(value, "__dlpack_device__"):
            kind, index = value.__dlpack_device__()
            if kind != DLPACK_CPU:
                device = DLPACK_DEVICES.get(int(kind), f"DLPack device type {kind}")
                return Diagnostic(where, f"got an array on a {device} device ({kind}:{index}), "
                                  "not in host memory",
                                  "copy it to the host first (torch: tensor.cpu(); CuPy: "
                                  "cupy.asnumpy(x))")
            return np.from_dlpack(value)
        return np.asarray(value)
    except (TypeError, ValueError, BufferError, RuntimeError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Diagnostic(where, f"cannot be read as an array: {first}",
                          "pass a numpy array, or a tensor in host memory (torch: "
                          "tensor.detach().cpu())")


class InputChecker:
    """validate_inputs for repeated calls: inputs whose names, array shapes
    and dtypes and scalar values passed before, each array dense and
    writeable, are taken as they are and their scalars as normalised then
    (the checks depend on nothing else)."""

    KEPT = 16
    """Signatures remembered (any more are checked in full)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._passed: dict[tuple, dict[str, Any]] = {}
        """signature -> the scalars as validate_inputs normalised them."""

    def check(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        key = _signature(inputs)
        scalars = self._passed.get(key) if key is not None else None
        if scalars is not None:
            return {**inputs, **scalars}
        checked = validate_inputs(self.graph, inputs)
        arrays = {name for name, value in inputs.items() if type(value) is np.ndarray}
        if key is not None and len(self._passed) < self.KEPT and \
                all(checked[name] is inputs[name] for name in arrays):
            self._passed[key] = {name: v for name, v in checked.items() if name not in arrays}
        return checked


_SCALARS = (bool, int, float, np.bool_, np.number)


def _signature(inputs: Mapping[str, Any]) -> tuple | None:
    """(name, shape, dtype) of every array input and (name, type, value)
    of every scalar one, when the arrays are dense and writeable and the
    rest are numbers; None otherwise."""
    key = []
    for name, value in inputs.items():
        if type(value) is np.ndarray:
            flags = value.flags
            if not (flags.c_contiguous and flags.writeable):
                return None
            key.append((name, value.shape, value.dtype))
        elif isinstance(value, _SCALARS):
            key.append((name, type(value), value))
        else:
            return None
    return tuple(key)
