"""Small builders for tests of compiled kernels, with the reference
interpreter as the oracle when it is installed.

    function = map_function({"a": F32}, F32, lambda a: a * 2.0)
    out = run_cpu(module_of(function), "map", {"a": x}, (len(x),))["out"]
    reference = run_reference(module_of(function), "map", {"a": x}, (len(x),))
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from hpvm.ir.graph import Module
from hpvm.ir.kernel import Expr, InstanceId, KernelFunction, Load, Store
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import BufferType, ScalarType, scalar_type_of_dtype

from .compiler import compile_kernel_node

MAP_FUNCTION = "map"


def module_of(*functions: KernelFunction) -> Module:
    """A module holding ``functions`` (the first is the node kernel) and no
    graphs: enough to compile and interpret single kernels."""
    return Module(functions[0].name, {f.name: f for f in functions}, {}, "main")


def map_function(inputs: Mapping[str, ScalarType], out: ScalarType,
                 compute: Callable[..., Expr], name: str = MAP_FUNCTION) -> KernelFunction:
    """A kernel setting ``out[i] = compute(in1[i], ...)`` for buffers of
    length N, one instance per element."""
    i = InstanceId(0)
    params = tuple(Parameter(n, BufferType(t, ("N",))) for n, t in inputs.items())
    params += (Parameter("out", BufferType(out, ("N",)), "out"),)
    loads = {n: Load(n, (i,), t) for n, t in inputs.items()}
    return KernelFunction(name, params, (Store("out", (i,), compute(**loads)),))


def run_cpu(module: Module, function: str, args: Mapping[str, Any],
            replication: tuple[int, ...], threads: int | None = None,
            options: dict | None = None) -> dict[str, np.ndarray]:
    """Compile and run; ``args`` are copied first (the kernel writes its
    buffers in place)."""
    copies = {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in args.items()}
    kernel = compile_kernel_node(module, function, len(replication), options)
    return kernel.run(copies, replication, threads=threads)


def run_reference(module: Module, function: str, args: Mapping[str, Any],
                  replication: tuple[int, ...]) -> dict[str, np.ndarray] | None:
    """The interpreter's result, or None when hpvm.interp is not there."""
    try:
        from hpvm.interp import run_kernel
    except ImportError:
        return None
    return run_kernel(module, function, dict(args), tuple(replication))


def assert_matches_reference(module: Module, function: str, args: Mapping[str, Any],
                             replication: tuple[int, ...], result: Mapping[str, np.ndarray],
                             rtol: float = 0.0, atol: float = 0.0) -> None:
    """Assert ``result`` (run_cpu's) equals the interpreter's buffers
    (NaNs equal); does nothing when the interpreter is not installed."""
    reference = run_reference(module, function, args, replication)
    if reference is None:
        return
    for name, expected in reference.items():
        if isinstance(expected, np.ndarray):
            assert_same(result[name], expected, rtol, atol, f"'{name}' vs interpreter")


def assert_same(actual: np.ndarray, expected, rtol: float = 0.0, atol: float = 0.0,
                what: str = "") -> None:
    """Equal dtype and values; exact unless a tolerance is given."""
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if rtol or atol:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def check_map(inputs: Mapping[str, np.ndarray], out: ScalarType, compute: Callable[..., Expr],
              expected, rtol: float = 0.0, atol: float = 0.0) -> np.ndarray:
    """Run ``map_function`` on ``inputs`` (arrays of equal length, IR types
    from their dtypes) and check it against ``expected`` and the
    interpreter; returns the output."""
    types = {n: scalar_type_of_dtype(a.dtype) for n, a in inputs.items()}
    module = module_of(map_function(types, out, compute))
    replication = (len(next(iter(inputs.values()))),)
    result = run_cpu(module, MAP_FUNCTION, inputs, replication)
    assert_same(result["out"], np.asarray(expected).astype(out.numpy_dtype), rtol, atol, "out")
    assert_matches_reference(module, MAP_FUNCTION, inputs, replication, result, rtol, atol)
    return result["out"]


def emit_aborting_with_the_loop_vectorizer(llvm_ir: str, machine, pipeline, jit: bool,
                                           filename=None):
    """``pipeline.emit``, except that the worker process aborts (a real
    SIGABRT, as LLVM's assertions raise) whenever the pipeline runs the
    loop vectoriser: set ``pipeline.EMITTER`` to this module's
    ``emit_aborting_with_the_loop_vectorizer`` to see the fallback."""
    import os
    from .pipeline import emit
    if pipeline.loop_vectorize and pipeline.run_passes:
        os.abort()
    return emit(llvm_ir, machine, pipeline, jit, filename)
