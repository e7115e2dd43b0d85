"""pyopencl arrays in and out of gpu_opencl (runtime/device_arrays.py):
arrays of the executable's context taken without a copy, outputs left on
the device as pyopencl arrays, on the static schedule and on the dynamic
scheduler of a program split with cpu; other contexts and views refused
naming the input."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.errors import ExecutionError
from hpvm.interp import run_module
from hpvm.ir.text import parse_module

cl = pytest.importorskip("pyopencl")
cl_array = pytest.importorskip("pyopencl.array")

N = 1000
PROGRAM = """hpvm 1.0
module pair

func @scale(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * f32(3.0)
}

func @add(in x: f32[N], in z: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + z[i]
}

graph @main(in data: f32[N], out result: f32[N], out side: f32[N]) {
  node first = @scale [N] hint %s
  node second = @add [N] hint %s
  edge first.y -> second.x all-to-all
  in data -> first.x
  in data -> second.z
  out second.y -> result
  out first.y -> side
}

root @main
"""


def module(hints=("gpu_opencl", "gpu_opencl")):
    return parse_module(PROGRAM % hints)


def data(seed=1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(N).astype(np.float32)


def expected(values: np.ndarray) -> dict:
    return run_module(module(), {"data": values})


def test_pyopencl_arrays_in_and_out_move_no_byte():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    assert exe._static_program() is not None
    for seed in (1, 2):
        values = data(seed)
        x = exe.device_array(values)
        assert isinstance(x, cl_array.Array)
        out = exe(data=x, outputs="device")
        assert all(isinstance(v, cl_array.Array) for v in out.values())
        for name, want in expected(values).items():
            np.testing.assert_allclose(out[name].get(), want, rtol=1e-6)
        assert exe.report().bytes_copied == 0
        np.testing.assert_array_equal(x.get(), values)


def test_an_array_the_user_made_in_the_context_is_taken():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    context = exe.device_array(np.zeros(1, np.float32)).context
    queue = cl.CommandQueue(context)
    values = data(3)
    x = cl_array.to_device(queue, values) * 2  # pending work on the user's queue
    out = exe(data=x)
    for name, want in expected(values * 2).items():
        np.testing.assert_allclose(out[name], want, rtol=1e-6)
    assert exe.report().bytes_copied == sum(v.nbytes for v in out.values())


def test_outputs_stay_on_the_device_on_a_program_split_with_cpu():
    exe = rt.compile(module(("gpu_opencl", "cpu")), targets=["gpu_opencl", "cpu"])
    values = data(4)
    out = exe(data=exe.device_array(values, target="gpu_opencl"), outputs="device")
    assert isinstance(out["side"], cl_array.Array)  # made on the device
    assert isinstance(out["result"], np.ndarray)  # made on the cpu
    for name, want in expected(values).items():
        got = out[name] if isinstance(out[name], np.ndarray) else out[name].get()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    copies = {r.node: r.copies for r in exe.report().records}
    assert "<outputs>" not in copies and "<inputs>" not in copies
    assert copies["second"].to_host == 2 * N * 4  # first's result and data, read on the cpu


def test_an_array_of_another_context_is_refused_naming_the_input():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    device = exe.device_array(np.zeros(1, np.float32)).context.devices[0]
    other = cl_array.to_device(cl.CommandQueue(cl.Context([device])), data())
    with pytest.raises(ExecutionError) as error:
        exe(data=other)
    text = str(error.value)
    assert "'data'" in text and "another OpenCL context" in text and "device_array" in text


def test_a_view_is_refused_naming_the_input():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    longer = exe.device_array(np.zeros(N + 4, np.float32))
    with pytest.raises(ExecutionError, match="'data'.*not dense from the start.*array.copy()"):
        exe(data=longer[4:])
    out = exe(data=longer[4:].copy())
    np.testing.assert_allclose(out["result"], expected(np.zeros(N, np.float32))["result"])


def test_an_array_passed_again_is_taken_as_before_and_a_new_one_as_itself():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    device = exe._static_program().resident
    x = exe.device_array(data(5))
    assert device.adopt(x)[0] is device.adopt(x)[0]  # the same buffer, checked once
    del x
    for seed in range(6):  # made and dropped in turn: a new array may get the old one's id
        values = data(seed)
        x = exe.device_array(values)
        out = exe(data=x, outputs="device")
        for name, want in expected(values).items():
            np.testing.assert_allclose(out[name].get(), want, rtol=1e-6)
        assert device.adopt(x)[0].buffer is x.base_data
        del x, out


def test_a_bound_run_reads_the_refilled_arrays_and_returns_the_same_outputs():
    exe = rt.compile(module(), targets=["gpu_opencl"])
    x = exe.device_array(data(1))
    run = exe.bind(data=x, outputs="device")
    first = run()
    for seed in (2, 3):
        values = data(seed)
        x.set(values)  # the caller refills its array in place
        out = run()
        assert all(out[name] is first[name] for name in out)
        for name, want in expected(values).items():
            np.testing.assert_allclose(out[name].get(), want, rtol=1e-6)
        assert exe.report().bytes_copied == 0


def test_a_bound_run_clears_and_copies_on_the_device_at_every_call():
    """Host inputs copied in, a value accumulated into (cleared) and
    values updated in place (private copies), at every call."""
    from pathlib import Path
    import importlib.util
    path = Path(__file__).parents[3] / "tests" / "runtime" / "test_static_run.py"
    spec = importlib.util.spec_from_file_location("gpu_bound_static", path)
    static = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(static)
    exe = rt.compile(parse_module(static.PROGRAM), targets=["gpu_opencl"],
                     options={"task_parallelism": False})
    a = data(4)[:64].copy()
    run = exe.bind(a=a, s=1.5)
    for value in (1.0, -2.0):
        a *= value
        static.check(run(), a, 1.5)
