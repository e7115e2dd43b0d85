"""run_kernel: one kernel over a replication, for testing kernels alone;
and the speed the golden model needs to keep tests quick."""
import time

import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    F32, I64, ArrayDecl, Assign, Barrier, BufferType, Const, For, InstanceId, KernelFunction, Let, Load,
    Module, Parameter, Store, Var,
)
from hpvm.interp import run_kernel

I, J = InstanceId(0), InstanceId(1)
IMAGE = BufferType(F32, ("H", "W"))


def axpy_module():
    params = (Parameter("a", F32), Parameter("x", BufferType(F32, ("N",))),
              Parameter("y", BufferType(F32, ("N",)), "inout"))
    body = (Store("y", (I,), Var("a", F32) * Load("x", (I,), F32) + Load("y", (I,), F32)),)
    return Module("axpy", {"axpy": KernelFunction("axpy", params, body)}, {}, "main")


def test_run_kernel_returns_every_buffer_after_the_run():
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, np.float32)
    result = run_kernel(axpy_module(), "axpy", {"a": 2.0, "x": x, "y": y}, (4,))
    np.testing.assert_array_equal(result["y"], 2 * x + 1)
    np.testing.assert_array_equal(result["x"], x)
    np.testing.assert_array_equal(y, np.ones(4))


def test_run_kernel_allocates_out_buffers_left_out():
    params = (Parameter("x", IMAGE), Parameter("y", IMAGE, "out"))
    body = (Store("y", (I, J), Load("x", (I, J), F32) * 2.0),)
    module = Module("m", {"k": KernelFunction("k", params, body)}, {}, "main")
    out = run_kernel(module, "k", {"x": np.ones((2, 3), np.float32)}, (2, 3))["y"]
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))


def test_run_kernel_of_an_unknown_function_lists_the_functions():
    with pytest.raises(ExecutionError, match="no such function.*axpy"):
        run_kernel(axpy_module(), "saxpy", {}, (1,))


def test_run_kernel_checks_its_arguments():
    with pytest.raises(ExecutionError, match="missing input 'a'"):
        run_kernel(axpy_module(), "axpy", {"x": np.zeros(2, np.float32),
                                           "y": np.zeros(2, np.float32)}, (2,))


def stencil_module():
    """out[i, j] = sum over t < 8 of x[i, (j + t) % W] * t."""
    x_at = Load("x", (I, (J + Var("t", I64)) % Var("W", I64)), F32)
    body = (
        Let("acc", F32, Const(0.0, F32)),
        For("t", Const(0, I64), Const(8, I64), 1, (
            Assign("acc", Var("acc", F32) + x_at * Var("t", I64).cast(F32)),)),
        Store("out", (I, J), Var("acc", F32)),
    )
    params = (Parameter("x", IMAGE), Parameter("out", IMAGE, "out"))
    return Module("stencil", {"k": KernelFunction("k", params, body)}, {}, "main")


def test_512_by_512_kernel_with_a_loop_runs_well_under_a_second():
    x = np.random.default_rng(4).uniform(size=(512, 512)).astype(np.float32)
    module = stencil_module()
    start = time.perf_counter()
    out = run_kernel(module, "k", {"x": x}, (512, 512))["out"]
    elapsed = time.perf_counter() - start
    expected = sum(np.roll(x, -t, axis=1) * np.float32(t) for t in range(8))
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    assert elapsed < 0.5, f"took {elapsed:.2f}s"


def test_run_kernel_takes_work_group_sizes_for_local_arrays():
    lid = I % 2
    body = (ArrayDecl("pair", F32, (2,), "local"),
            Store("pair", (lid,), Load("x", (I,), F32)),
            Barrier(),
            Store("y", (I,), Load("pair", (Const(1, I64) - lid,), F32)))
    params = (Parameter("x", BufferType(F32, ("N",))),
              Parameter("y", BufferType(F32, ("N",)), "out"))
    module = Module("swap", {"swap": KernelFunction("swap", params, body)}, {}, "main")
    out = run_kernel(module, "swap", {"x": np.arange(6, dtype=np.float32)}, (6,), group=(2,))
    np.testing.assert_array_equal(out["y"], [1, 0, 3, 2, 5, 4])
