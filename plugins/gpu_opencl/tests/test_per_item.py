"""Work items running several instances of the innermost dimension
(option per_item; OpenCLDevice.work_items), adjacent or strided (option
per_item_layout): the same results as the interpreter wherever the launch
is divided, tails included; launches too
small to fill the device are not divided; kernels that synchronise their
group or return early run one instance a work item; ``restrict`` only
where no other buffer can reach the memory."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm_opencl.launch import default_group

PROGRAM = """hpvm 1.0
module strided

func @rows(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  let left: i64 = max(c - 1, 0)
  y[r, c] = (x[r, left] + x[r, c]) * f32(0.5) + f32(instance_count(1))
}

func @scale(in y: f32[H, W], out z: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  z[r, c] = y[r, c] * f32(3.0)
}

graph @main(in x: f32[H, W], out z: f32[H, W]) {
  node first = @rows [H, W]
  node second = @scale [H, W]
  edge first.y -> second.y all-to-all
  in x -> first.x
  out second.z -> z
}

root @main
"""
EARLY_RETURN = """hpvm 1.0
module early

func @clip(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = f32(0.0)
  if x[i] < f32(0.0) {
    return
  }
  y[i] = x[i]
}

func @bump(inout y: f32[N], in x: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = y[i] + x[i]
}

graph @main(in x: f32[N], out y: f32[N]) {
  node k = @clip [N]
  node b = @bump [N]
  edge k.y -> b.y all-to-all
  in x -> k.x
  in x -> b.x
  out b.y -> y
}

root @main
"""


def device_of(exe):
    return exe._static_program().resident


def source_of(exe) -> str:
    return exe.artifacts["gpu_opencl"].files["kernels.cl"].decode()


def filling_width(exe, rows: int) -> int:
    """A row width past the divided launch's threshold on this device,
    not a multiple of four (a tail in every row)."""
    info = device_of(exe).runtime.info
    return max(4 * 2048 * info.compute_units // rows + 1, 4 * 32 + 1) | 1


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("per_item", [4, 2, 1])
def test_divided_launches_compute_what_the_interpreter_does(per_item, layout):
    module = parse_module(PROGRAM)
    exe = rt.compile(module, targets=["gpu_opencl"],
                     options={"per_item": per_item, "per_item_layout": layout})
    rows = 3
    x = np.random.default_rng(0).standard_normal((rows, filling_width(exe, rows)))
    x = x.astype(np.float32)
    plan = next(iter(device_of(exe).plans.values()))
    assert plan.per_item == per_item
    divided = device_of(exe).work_items(plan, x.shape)
    assert divided == (rows, -(-x.shape[1] // per_item))
    np.testing.assert_allclose(exe(x=x)["z"], run_module(module, {"x": x})["z"], rtol=1e-6)
    assert ("hpvm_step < " in source_of(exe)) == (per_item > 1)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_a_launch_too_small_to_fill_the_device_runs_an_instance_a_work_item(layout):
    module = parse_module(PROGRAM)
    exe = rt.compile(module, targets=["gpu_opencl"],
                     options={"per_item": 4, "per_item_layout": layout})
    x = np.random.default_rng(1).standard_normal((5, 300)).astype(np.float32)
    plan = next(iter(device_of(exe).plans.values()))
    assert device_of(exe).work_items(plan, x.shape) == x.shape
    assert device_of(exe).work_items(plan, (100000, 3)) == (100000, 3)  # rows too narrow
    np.testing.assert_allclose(exe(x=x)["z"], run_module(module, {"x": x})["z"], rtol=1e-6)


def test_an_early_return_keeps_an_instance_a_work_item_and_inout_drops_restrict():
    module = parse_module(EARLY_RETURN)
    exe = rt.compile(module, targets=["gpu_opencl"], options={"per_item": 4})
    plans = {p.function: p for p in device_of(exe).plans.values()}
    assert plans["clip"].per_item == 1 and plans["bump"].per_item == 4
    source = source_of(exe)
    clip = source[source.index("void hpvm_k_clip"):source.index("void hpvm_k_bump")]
    bump = source[source.index("void hpvm_k_bump"):]
    assert "float* restrict y" in clip and "const float* restrict x" in clip
    assert "restrict" not in bump.split(")")[0]  # y is updated in place: x may be y
    n = filling_width(exe, 1)
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(exe(x=x)["y"], run_module(module, {"x": x})["y"], rtol=1e-6)


def test_the_default_steps_on_a_gpu_only():
    from hpvm_gpu_opencl.target import default_per_item, on_gpu
    exe = rt.compile(parse_module(PROGRAM), targets=["gpu_opencl"])
    plan = next(iter(device_of(exe).plans.values()))
    assert plan.per_item == default_per_item({}) == (4 if on_gpu({}) else 1)


def test_groups_of_rows_by_default_on_a_gpu_tails_included():
    module = parse_module(PROGRAM)
    exe = rt.compile(module, targets=["gpu_opencl"], options={"per_item": 4})
    rows = 6  # not a multiple of the group's 4 rows
    x = np.random.default_rng(3).standard_normal((rows, filling_width(exe, rows)))
    x = x.astype(np.float32)
    device = device_of(exe)
    plan = next(iter(device.plans.values()))
    _, local = device.launch_geometry(plan, x.shape, None, None, False)
    assert local == ((64, 4) if "GPU" in device.runtime.info.kind else None)
    np.testing.assert_allclose(exe(x=x)["z"], run_module(module, {"x": x})["z"], rtol=1e-6)
    narrow = np.random.default_rng(4).standard_normal((400, 17)).astype(np.float32)
    # rows narrower than a group's: whole rows (400 rows: a tail), as many
    # as leave every compute unit a group, down to a warp's (default_group)
    _, local = device.launch_geometry(plan, narrow.shape, None, None, False)
    on_gpu = "GPU" in device.runtime.info.kind
    expected = default_group(narrow.shape, 256, device.runtime.info.compute_units)
    assert local == (tuple(reversed(expected)) if on_gpu else None)
    np.testing.assert_allclose(exe(x=narrow)["z"], run_module(module, {"x": narrow})["z"],
                               rtol=1e-6)
    # the default never exceeds what the kernel itself may hold in a group
    assert 0 < device._group_limit(plan.entry) <= device.runtime.info.max_work_group_size



PLANES = """hpvm 1.0
module planes

func @sweep(in a: f32[D, H, W], out b: f32[D, H, W]) {
  let z: i64 = instance_id(0)
  let y: i64 = instance_id(1)
  let x: i64 = instance_id(2)
  b[z, y, x] = a[z, y, x]
  if 0 < z && z < D - 1 && (0 < y && y < H - 1) && (0 < x && x < W - 1) {
    b[z, y, x] = a[z + 1, y, x] + a[z - 1, y, x] * f32(2) + a[z, y + 1, x] - a[z, y, x - 1]
  }
}

graph @main(in a: f32[D, H, W], out b: f32[D, H, W]) {
  node s = @sweep [D, H, W]
  in a -> s.a
  out s.b -> b
}

root @main
"""


@pytest.mark.parametrize("lanes, element", [(1, "f32"), (2, "f32"), (4, "f32"), (8, "f32"),
                                            (4, "i32"), (2, "f64")])
def test_a_march_along_the_planes_computes_what_the_interpreter_does(lanes, element):
    """...with each work item's lanes of the rows too (lanes.py), rows
    that end inside a work item's lanes included."""
    module = parse_module(PLANES.replace("f32", element))
    exe = rt.compile(module, targets=["gpu_opencl"],
                     options={"per_item": 4, "per_item_layout": "march", "lanes": lanes})
    plan = next(iter(device_of(exe).plans.values()))
    assert plan.stepped == 0 and plan.lanes == lanes and "hpvm_column_a" in source_of(exe)
    assert ("vstore" in source_of(exe)) == (lanes > 1)
    info = device_of(exe).runtime.info
    side = max(int((4 * lanes * 2048 * info.compute_units / 18) ** 0.5) + 1, 32 * lanes)
    a = np.random.default_rng(4).standard_normal((18, side, side + 3)) * 100
    a = a.astype({"f32": np.float32, "i32": np.int32, "f64": np.float64}[element])
    # 18 planes, rows of side + 3: tails of both
    assert device_of(exe).work_items(plan, a.shape) == (5, side, -(-(side + 3) // lanes))
    np.testing.assert_allclose(exe(a=a)["b"], run_module(module, {"a": a})["b"], rtol=1e-6)
    small = a[:3, :5, :7].copy()  # too few to divide: an instance a work item
    assert device_of(exe).work_items(plan, small.shape) == small.shape
    np.testing.assert_allclose(exe(a=small)["b"], run_module(module, {"a": small})["b"],
                               rtol=1e-6)


PADDED = """hpvm 1.3
module padded

func @smooth(in a: f32[P, Q], in H: i64, in W: i64, out b: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  b[y, x] = a[y + 1, x + 1] * f32(4) - a[y, x + 1] - a[y + 2, x + 1] - a[y + 1, x] - a[y + 1, x + 5]
}

graph @main(in a: f32[P, Q], in H: i64, in W: i64, out b: f32[H, W]) {
  node s = @smooth [H, W]
  in a -> s.a
  in H -> s.H
  in W -> s.W
  out s.b -> b
}

root @main
"""


@pytest.mark.parametrize("lanes", [2, 4])
def test_lanes_read_a_padded_input_and_neighbours_past_their_vector(lanes):
    """A read two elements right of the lanes' vector (x + 5) or left of it
    loads as written; the others come from the rows' vectors."""
    module = parse_module(PADDED)
    exe = rt.compile(module, targets=["gpu_opencl"],
                     options={"per_item": 4, "per_item_layout": "march", "lanes": lanes})
    assert "hpvm_column_a" in source_of(exe)
    info = device_of(exe).runtime.info
    side = max(int((4 * lanes * 2048 * info.compute_units) ** 0.5) + 1, 32 * lanes)
    a = np.random.default_rng(5).standard_normal((side + 2, side + 3 + 8)).astype(np.float32)
    plan = next(iter(device_of(exe).plans.values()))
    assert device_of(exe).work_items(plan, (side, side + 3)) == (-(-side // 4),
                                                                  -(-(side + 3) // lanes))
    sizes = {"H": side, "W": side + 3}
    np.testing.assert_allclose(exe(a=a, **sizes)["b"], run_module(module, {"a": a, **sizes})["b"],
                               rtol=1e-6)
