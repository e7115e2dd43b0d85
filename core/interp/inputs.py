"""Checking what a user passes to a program before anything runs.

:func:`check_inputs` validates a whole set of inputs against parameters
(names, dtypes, ranks, fixed sizes, agreement of size symbols) and returns
them as the interpreter wants them.  Arrays are never cast silently; only
Python numbers given for scalar parameters are converted to the
parameter's type.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.parameter import Parameter
from hpvm.ir.shapes import bind_symbols
from hpvm.ir.types import ScalarType


def check_inputs(params: Iterable[Parameter], inputs: Mapping[str, Any], where: Location,
                 optional: Iterable[str] = ()) -> dict[str, Any]:
    """``inputs`` validated against the reading ``params`` (in, inout,
    private, scalars); names in ``optional`` may be left out.  Raises an
    ExecutionError naming the parameter and the fix."""
    params = tuple(params)
    expected = [p for p in params if p.direction != "out"]
    expected_names = [p.name for p in expected]
    for name in inputs:
        if name not in expected_names:
            raise _unknown_input(name, params, expected_names, where)
    missing = [n for n in expected_names if n not in inputs and n not in set(optional)]
    if missing:
        raise ExecutionError(Diagnostic(
            where, f"missing input{'s' if len(missing) > 1 else ''} "
                   f"{', '.join(repr(n) for n in missing)}",
            f"pass every input: {', '.join(expected_names)}"))
    converted = {p.name: convert_argument(p, inputs[p.name], where)
                 for p in expected if p.name in inputs}
    bind_symbols(params, converted, where)
    return converted


def _unknown_input(name: str, params, expected_names, where: Location) -> ExecutionError:
    outputs = [p.name for p in params if p.direction == "out"]
    if name in outputs:
        message = f"'{name}' is an output, not an input"
        fix = "do not pass outputs; they are returned"
    else:
        message = f"unknown input '{name}'"
        fix = f"the inputs are {', '.join(expected_names) or '(none)'}"
    return ExecutionError(Diagnostic(where, message, fix))


def convert_argument(param: Parameter, value, where: Location):
    """``value`` as the interpreter takes it for ``param``: a numpy array of
    the exact element dtype for buffers, a 0-d value of the type for
    scalars."""
    at = Location(graph=where.graph, node=where.node, function=where.function, port=param.name)
    if param.is_buffer:
        return _buffer_argument(param, value, at)
    return _scalar_argument(param.type, value, at)


def _buffer_argument(param: Parameter, value, at: Location) -> np.ndarray:
    expected = param.type.element.numpy_dtype
    if not isinstance(value, np.ndarray):
        raise ExecutionError(Diagnostic(
            at, f"expects a numpy array of type {param.type}, got {type(value).__name__}",
            f"pass np.asarray(value, dtype=np.{expected.name})"))
    if value.dtype != expected:
        raise ExecutionError(Diagnostic(
            at, f"expects elements of type {param.type.element} ({expected.name}), "
                f"got {value.dtype.name}",
            f"convert it yourself: value.astype(np.{expected.name})"))
    shape = param.type.shape
    if shape is not None:
        if value.ndim != len(shape):
            raise ExecutionError(Diagnostic(
                at, f"expects a rank-{len(shape)} array ({param.type}), got shape "
                    f"{list(value.shape)}", f"pass an array of rank {len(shape)}"))
        for axis, (dim, size) in enumerate(zip(shape, value.shape)):
            if isinstance(dim, int) and dim != size:
                raise ExecutionError(Diagnostic(
                    at, f"expects size {dim} in dimension {axis} ({param.type}), got "
                        f"shape {list(value.shape)}", f"pass an array of type {param.type}"))
    return value


def _scalar_argument(type: ScalarType, value, at: Location):
    dtype = type.numpy_dtype
    if isinstance(value, (np.ndarray, np.generic)):
        if np.ndim(value) != 0 or value.dtype != dtype:
            raise ExecutionError(Diagnostic(
                at, f"expects a scalar {type}, got a {value.dtype.name} value of shape "
                    f"{list(np.shape(value))}", f"pass a Python number or np.{dtype.name}(...)"))
        return np.asarray(value)
    if _python_number_fits(type, value):
        return np.asarray(value, dtype=dtype)
    raise ExecutionError(Diagnostic(
        at, f"expects a scalar {type}, got {value!r}",
        f"pass a {_python_kind(type)} that fits in {type}"))


def _python_number_fits(type: ScalarType, value) -> bool:
    if type.is_bool:
        return isinstance(value, bool)
    if type.is_int:
        if not isinstance(value, int) or isinstance(value, bool):
            return False
        info = np.iinfo(type.numpy_dtype)
        return info.min <= value <= info.max
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _python_kind(type: ScalarType) -> str:
    if type.is_bool:
        return "bool"
    return "int" if type.is_int else "number"
