"""Launches of a program wholly on the device, prepared once
(hpvm_opencl.bound_launch): each call reads the buffers and scalars it is
given, whether they are the ones of the call before or others; node
times are the kernels' own (profiling events)."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.ir.text import parse_module

cl_array = pytest.importorskip("pyopencl.array")

PROGRAM = """hpvm 1.0
module bound

func @scale(in x: f32[N], in s: f32, out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * s
}

func @add(in x: f32[N], in z: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + z[i]
}

graph @main(in data: f32[N], in s: f32, out result: f32[N]) {
  node first = @scale [N]
  node second = @add [N]
  edge first.y -> second.x all-to-all
  in data -> first.x
  in s -> first.s
  in data -> second.z
  out second.y -> result
}

root @main
"""


@pytest.fixture(scope="module")
def exe():
    exe = rt.compile(parse_module(PROGRAM), targets=["gpu_opencl"])
    assert exe._static_program() is not None
    return exe


def test_each_call_reads_the_device_arrays_and_scalars_it_is_given(exe):
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
    arrays = [exe.device_array(h) for h in hosts]
    for index, s in ((0, 2.0), (1, 2.0), (1, -3.0), (0, -3.0), (2, 0.5), (2, 0.5)):
        got = exe(data=arrays[index], s=s, outputs="device")["result"].get()
        np.testing.assert_allclose(got, hosts[index] * np.float32(s) + hosts[index], rtol=1e-6)


def test_a_scalar_is_set_again_when_only_its_sign_bit_differs(exe):
    data = np.full(16, -0.0, np.float32)   # (-0 * s) + -0: -0 for s = +0, +0 for s = -0
    assert np.signbit(exe(data=data, s=0.0)["result"]).all()
    assert not np.signbit(exe(data=data, s=-0.0)["result"]).any()
    assert np.signbit(exe(data=data, s=0.0)["result"]).all()


def test_node_times_are_the_kernels_own(exe):
    exe(data=np.ones(4096, np.float32), s=1.0)
    records = {r.node: r for r in exe.report().records}
    assert 0.0 < records["first"].seconds < 1.0 and 0.0 < records["second"].seconds < 1.0


def test_outputs_left_on_the_device_are_dense_pyopencl_arrays_of_their_shape():
    from pathlib import Path
    from hpvm.ir.text import load_module
    module = load_module(Path(__file__).resolve().parents[3] / "examples" / "ir" / "matmul.hpvm")
    exe = rt.compile(module, targets=["gpu_opencl"])
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 7), (7, 3)))
    c = exe(a=a, b=b, outputs="device")["c"]
    assert isinstance(c, cl_array.Array) and c.flags.c_contiguous
    assert (c.shape, c.strides, c.size, c.nbytes) == ((5, 3), (12, 4), 15, 60)
    np.testing.assert_allclose((c * 2).get(), 2 * a @ b, rtol=1e-5)
