"""Local arrays with barriers, atomics, f16 and f64, private buffers,
helpers, control flow and 2-D replication, through hpvm.compile on the
OpenCL device, against the reference interpreter."""
from pathlib import Path

import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.errors import ExecutionError, TargetError
from hpvm.interp import run_module
from hpvm.ir.text import load_module
from hpvm_opencl.devices import DeviceInfo

FEATURES = Path(__file__).with_name("data") / "features.hpvm"


def feature_inputs(n: int = 16) -> dict:
    rng = np.random.default_rng(0)
    return dict(a=rng.standard_normal(n).astype(np.float32),
                values=rng.integers(0, 50, n).astype(np.int32),
                h=(rng.standard_normal(n) * 4).astype(np.float16), scale=np.float16(1.5),
                p=np.array([1, 2, 3], np.float32), ints=rng.integers(-3, 30, n).astype(np.int32),
                flag=True, m=rng.standard_normal((3, 5)), bias=0.25)


@pytest.fixture(scope="module")
def module():
    return load_module(FEATURES)


@pytest.fixture(scope="module")
def executable(module):
    return rt.compile(module, targets=["gpu_opencl"])


@pytest.fixture(scope="module")
def outputs(module, executable):
    inputs = feature_inputs()
    expected = run_module(module, inputs)  # first: it reports out-of-range accesses
    return executable(**inputs), expected


OUTPUTS = [p.name for p in load_module(FEATURES).root_graph.params if p.direction == "out"]


@pytest.mark.parametrize("name", OUTPUTS)
def test_feature_kernels_match_the_interpreter(outputs, name):
    got, expected = outputs
    assert got[name].dtype == expected[name].dtype
    np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, atol=1e-6, err_msg=name)


def test_every_node_runs_on_the_opencl_device(executable):
    assert set(executable.placement.targets.values()) == {"gpu_opencl"}


def test_synchronizing_kernels_need_replication_divisible_by_their_group(executable):
    with pytest.raises(ExecutionError, match="multiple of its group"):
        executable(**feature_inputs(10))


def test_f64_on_a_device_without_it_is_a_clear_error(module, monkeypatch):
    monkeypatch.setattr(DeviceInfo, "fp64", property(lambda self: False))
    with pytest.raises(TargetError, match=r"'@main.grid'.*f64.*cl_khr_fp64") as error:
        rt.compile(module, targets=["gpu_opencl"])
    assert "'@main.histogram'" in str(error.value) and "'@main.halves'" not in str(error.value)


def test_generated_source_keeps_loops_pragmas_and_coalesced_dimensions(module, executable):
    source = executable.artifacts["gpu_opencl"].files["kernels.cl"].decode()
    assert "#pragma unroll 4" in source
    # the innermost IR dimension is OpenCL's first, each work item stepping over it
    stepping = rt.compile(module, targets=["gpu_opencl"],
                          options={"per_item": 4, "per_item_layout": "strided"})
    stepping = stepping.artifacts["gpu_opencl"].files["kernels.cl"].decode()
    assert "const long hpvm_first = (long)get_global_id(0);" in stepping
    assert "const long hpvm_id1 = hpvm_first + hpvm_step * hpvm_stride;" in stepping
    assert "const long hpvm_id0 = (long)get_global_id(1);" in stepping
    assert "__local float tile[4];" in source
    assert "vload_half((HPVM_INDEX)i, h)" in source


SCALAR_BUFFER = """hpvm 1.3
module scalar_buffer

func @pick(in x: f32[2, 8], in at: i64[], out y: f32[2]) {
  let i: i64 = instance_id(0)
  y[i] = x[i, at[0]]
}

graph @main(in x: f32[2, 8], in at: i64[], out y: f32[2]) {
  node pick = @pick [2]
  in x -> pick.x
  in at -> pick.at
  out pick.y -> y
}

root @main
"""


def test_a_buffer_of_no_dimensions_takes_no_size_arguments():
    """A 0-d buffer (a gather's index in BERT's and ViT's ``hidden[:, 0]``)
    is passed without dimensions, as the host sets them."""
    from hpvm.ir.text import parse_module
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    got = rt.compile(parse_module(SCALAR_BUFFER), targets=["gpu_opencl"])(
        x=x, at=np.array(3, np.int64))
    np.testing.assert_array_equal(got["y"], x[:, 3])
