"""Checking a program's inputs against its root graph before anything runs."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import Diagnostic, ExecutionError, Location
from ..ir.graph import Graph
from ..ir.shapes import bind_symbols
from .device_arrays import DLPACK_CPU, HOST_COPY_FIX, DeviceArrays, device_name, dlpack_device
from .memory import CopyStats, Value


def validate_inputs(graph: Graph, inputs: Mapping[str, Any],
                    required: tuple[str, ...] | None = None,
                    arrays: DeviceArrays | None = None,
                    copied: CopyStats | None = None) -> dict[str, Any]:
    """``inputs`` checked and normalised: arrays of the declared dtype and
    rank, scalars as numpy scalars of the declared type.  ``required``
    limits the check to some parameters (streaming frames).  ``arrays``
    takes inputs that live on devices (device_arrays.py), adding the bytes
    it copies to the host to ``copied``."""
    copied = copied if copied is not None else CopyStats()
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
        if p.is_buffer and arrays is not None:
            taken = arrays.take(value, where, copied)
            if isinstance(taken, Diagnostic):
                problems.append(taken)
                continue
            value = value if taken is None else taken
        if p.is_buffer and isinstance(value, Value):  # staged, or on a device
            if value.dtype != p.type.element.numpy_dtype:
                problems.append(Diagnostic(where, f"expects dtype {p.type.element.numpy_dtype} "
                                           f"({p.type}), got a device array of {value.dtype}",
                                           "pass an array of the declared type"))
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


def host_array(value, where: Location) -> np.ndarray | Diagnostic:
    """``value`` (the input at ``where``) as a numpy array over the same
    memory (numpy, and through DLPack any array in host memory: PyTorch,
    JAX, CuPy's pinned arrays ...); otherwise a Diagnostic saying why not
    and what to do."""
    if isinstance(value, np.ndarray):
        return value
    try:
        place = dlpack_device(value)
        if place is not None:
            if place[0] != DLPACK_CPU:
                return Diagnostic(where, f"got an array on a {device_name(place[0])} device "
                                  f"({place[0]}:{place[1]}), not in host memory", HOST_COPY_FIX)
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
    (the checks depend on nothing else).  Arrays of other libraries of a
    shape and dtype that a device took before are taken by a device again
    (DeviceArrays.take), and must come out as before: a device's buffer of
    the same dtype; anything else is checked in full."""

    KEPT = 16
    """Signatures remembered (any more are checked in full)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self._passed: dict[tuple, tuple[dict[str, Any], dict[str, np.dtype]]] = {}
        """signature -> (the scalars as validate_inputs normalised them, the
        dtype of each input a device took)."""

    def check(self, inputs: Mapping[str, Any], arrays: DeviceArrays | None = None,
              copied: CopyStats | None = None) -> dict[str, Any]:
        """``inputs`` checked (validate_inputs says how)."""
        key = _signature(inputs)
        passed = self._passed.get(key) if key is not None else None
        if passed is not None:
            taken = self._taken_again(inputs, passed[1], arrays)
            if taken is not None:
                return {**inputs, **passed[0], **taken}
        checked = validate_inputs(self.graph, inputs, arrays=arrays, copied=copied)
        on_device = {name: value.dtype for name, value in checked.items()
                     if isinstance(value, Value) and not isinstance(inputs[name], Value)}
        buffers = {name for name, value in inputs.items() if not isinstance(value, _SCALARS)}
        if key is not None and len(self._passed) < self.KEPT and \
                all(name in on_device or checked[name] is inputs[name] for name in buffers):
            self._passed[key] = ({name: v for name, v in checked.items() if name not in buffers},
                                 on_device)
        return checked

    def _taken_again(self, inputs: Mapping[str, Any], on_device: dict[str, np.dtype],
                     arrays: DeviceArrays | None) -> dict[str, Value] | None:
        """The device arrays among ``inputs`` taken as they were before, or
        None where one is not."""
        if not on_device:
            return {}
        if arrays is None:
            return None
        taken = {}
        for name, dtype in on_device.items():
            value = arrays.adopted(inputs[name])
            if value is None or value.dtype != dtype:
                return None
            taken[name] = value
        return taken


_SCALARS = (bool, int, float, np.bool_, np.number)


def _exactly(value) -> Any:
    """A scalar as a key that only the same value matches: a float by its
    bits (0.0 and -0.0 are equal numbers, not the same input)."""
    if isinstance(value, np.inexact):
        return value.tobytes()
    return value.hex() if isinstance(value, float) else value


def _signature(inputs: Mapping[str, Any]) -> tuple | None:
    """(name, shape, dtype) of every numpy array input, (name, type, shape,
    dtype) of every other array (another library's, or a staged Value),
    and (name, type, value) of every scalar one, when the numpy arrays are
    dense and writeable and the rest are numbers; None otherwise."""
    key = []
    for name, value in inputs.items():
        if type(value) is np.ndarray:
            flags = value.flags
            if not (flags.c_contiguous and flags.writeable):
                return None
            key.append((name, value.shape, value.dtype))
        elif isinstance(value, _SCALARS):
            key.append((name, type(value), _exactly(value)))
        else:
            try:
                key.append((name, type(value), tuple(value.shape), value.dtype))
                hash(key[-1])
            except (AttributeError, TypeError):
                return None
    return tuple(key)
