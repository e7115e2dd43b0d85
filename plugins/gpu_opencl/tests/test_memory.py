"""Programs split between gpu_opencl and cpu run correctly, and the memory
tracker moves exactly the buffers that change device: counted in bytes."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm.testing import assert_outputs_close

N = 1000
FLOAT = 4

CHAIN = """hpvm 1.0
module chain

func @negate(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = -x[i]
}

func @square(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * x[i]
}

func @add(in x: f32[N], in z: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + z[i]
}

graph @main(in data: f32[N], out result: f32[N], out side: f32[N]) {
  node first = @negate [N] hint %s
  node second = @square [N] hint %s
  node third = @add [N] hint %s
  node fourth = @square [N] hint %s
  edge first.y -> second.x all-to-all
  edge second.y -> third.x all-to-all
  edge first.y -> third.z all-to-all
  edge first.y -> fourth.x all-to-all
  in data -> first.x
  out third.y -> result
  out fourth.y -> side
}

root @main
"""


def run_chain(hints):
    module = parse_module(CHAIN % hints)
    data = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    exe = rt.compile(module, targets=["gpu_opencl", "cpu"])
    assert_outputs_close(exe(data=data), run_module(module, {"data": data}))
    report = exe.report()
    copied = {r.node: (r.copies.to_device, r.copies.to_host) for r in report.records}
    return exe, report.bytes_copied, copied


def test_all_on_the_device_copies_inputs_in_and_outputs_out_only():
    exe, total, copied = run_chain(("gpu_opencl",) * 4)
    assert set(exe.placement.targets.values()) == {"gpu_opencl"}
    assert total == 3 * N * FLOAT
    # the static schedule's copies, in and out: the nodes copy nothing
    assert copied["<inputs>"] == (N * FLOAT, 0)
    assert copied["first"] == copied["second"] == copied["third"] == copied["fourth"] == (0, 0)
    assert copied["<outputs>"] == (0, 2 * N * FLOAT)


def test_a_cpu_node_in_the_middle_moves_only_what_crosses_devices():
    exe, total, copied = run_chain(("gpu_opencl", "cpu", "gpu_opencl", "cpu"))
    assert exe.placement.targets["@main.second"] == "cpu"
    # first.y goes to the host once (second, fourth share the copy);
    # second.y goes back to the device; third.y comes out.
    assert copied["first"] == (N * FLOAT, 0)
    assert sorted([copied["second"], copied["fourth"]]) == [(0, 0), (0, N * FLOAT)]
    assert copied["third"] == (N * FLOAT, 0)
    assert copied["<outputs>"] == (0, N * FLOAT)
    assert total == 4 * N * FLOAT


def test_a_cpu_producer_feeds_the_device_once():
    exe, total, copied = run_chain(("cpu", "gpu_opencl", "gpu_opencl", "cpu"))
    assert copied["first"] == (0, 0)
    assert copied["second"] == (N * FLOAT, 0)
    assert copied["third"] == (0, 0)  # first.y is already on the device
    assert copied["<outputs>"] == (0, N * FLOAT)
    assert total == 2 * N * FLOAT


@pytest.mark.parametrize("hint", ["gpu_opencl", "cpu"])
def test_repeated_runs_give_the_same_counts(hint):
    _, first, _ = run_chain((hint,) * 4)
    _, second, _ = run_chain((hint,) * 4)
    assert first == second == (3 * N * FLOAT if hint == "gpu_opencl" else 0)


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("hints", [("gpu_opencl",) * 4, ("gpu_opencl", "cpu", "gpu_opencl", "cpu")])
def test_asynchronous_launches_keep_every_dependence(parallel, hints):
    """Launches return at once; kernels wait for their inputs' writers (and
    writers for their readers) on the device, across queues and devices."""
    module = parse_module(CHAIN % hints)
    data = np.random.default_rng(2).standard_normal(N).astype(np.float32)
    exe = rt.compile(module, targets=["gpu_opencl", "cpu"],
                     options={"task_parallelism": parallel,
                              "gpu_opencl": {"asynchronous": True}})
    for _ in range(5):
        assert_outputs_close(exe(data=data), run_module(module, {"data": data}))
    labels = {r.target for r in exe.report().records if r.node != "<outputs>"}
    assert "gpu_opencl (asynchronous: launch times)" in labels


def test_asynchronous_reductions_and_constants_match_the_interpreter():
    from hpvm.demo.edge_detection import edge_detect, make_inputs, reference
    inputs = make_inputs(np.random.default_rng(0))
    exe = rt.compile(edge_detect, targets=["gpu_opencl"],
                     options={"pipeline": "node-fusion,parallel-reduce{lanes=8},dce",
                              "gpu_opencl": {"asynchronous": True}})
    for _ in range(3):
        np.testing.assert_array_equal(exe(**inputs)["edges"], reference(inputs)["edges"])


RESIDENT = """hpvm 1.0
module resident

func @scale(in x: f32[N], in s: f32, out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * s
}

func @accumulate(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = y[i] + x[i]
}

func @bump(inout x: f32[N]) {
  let i: i64 = instance_id(0)
  x[i] = x[i] + f32(1.0)
}

graph @main(in a: f32[N], in s: f32, out total: f32[N], out bumped: f32[N],
            out scaled: f32[N]) {
  node first = @scale [N]
  node second = @accumulate [N]
  node updater = @bump [N]
  edge first.y -> second.x all-to-all
  edge first.y -> updater.x all-to-all
  in a -> first.x
  in s -> first.s
  out second.y -> total
  out updater.x -> bumped
  out first.y -> scaled
}

root @main
"""


def test_a_program_wholly_on_the_device_keeps_its_values_there_run_after_run():
    module = parse_module(RESIDENT)
    exe = rt.compile(module, targets=["gpu_opencl"])
    assert exe._static_program() is not None   # the GPU fills with one kernel: in order
    rng = np.random.default_rng(4)
    for n, s in ((N, 2.0), (N, -1.5), (7, 0.5), (N, 3.0)):
        a = rng.standard_normal(n).astype(np.float32)
        out = exe(a=a, s=s)
        # accumulate reads its output (made cleared in each run); bump updates
        # scale's output, which scaled still hands out (a device copy)
        assert_outputs_close(out, run_module(module, {"a": a, "s": s}))
    records = exe.report().records
    assert [r.node for r in records] == ["<inputs>", "first", "second", "updater", "<outputs>"]


def test_staged_inputs_stay_on_the_device_and_unchanged():
    module = parse_module(RESIDENT)
    exe = rt.compile(module, targets=["gpu_opencl"])
    a = np.random.default_rng(5).standard_normal(N).astype(np.float32)
    staged = exe.stage(a=a)
    for s in (1.5, -2.0, 1.5):
        assert_outputs_close(exe(**staged, s=s), run_module(module, {"a": a, "s": s}))
        assert exe.report().bytes_copied == 3 * N * FLOAT   # the three results only


def test_results_read_back_reuse_the_memory_of_dropped_ones():
    """Arrays of 1 MiB or more come from the device's output pool, and go
    back to it once the caller drops them."""
    module = parse_module(RESIDENT)
    exe = rt.compile(module, targets=["gpu_opencl"])
    pool = exe._get_devices()["gpu_opencl"].host_arrays
    n = 1 << 18
    a = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    first = exe(a=a, s=2.0)
    held = exe(a=a, s=3.0)
    assert pool.idle_blocks() == 0
    address = first["total"].ctypes.data
    del first
    assert pool.idle_blocks() == 2   # the first run's three results; two are kept
    again = exe(a=a, s=4.0)
    assert address in {value.ctypes.data for value in again.values()}
    for outputs, s in ((held, 3.0), (again, 4.0)):
        assert_outputs_close(outputs, run_module(module, {"a": a, "s": s}))


EARLY_OUTPUT = CHAIN.split("graph @")[0] + """graph @main(in x: f32[N], out first: f32[N],
                                                 out last: f32[N]) {
  node one = @negate [N]
  node two = @square [N]
  node three = @negate [N]
  edge one.y -> two.x all-to-all
  edge two.y -> three.x all-to-all
  in x -> one.x
  out one.y -> first
  out three.y -> last
}

root @main
"""


@pytest.mark.parametrize("run", range(2))
def test_an_output_read_by_a_later_node_lives_to_the_end_of_the_run(run):
    """A resident run copies its outputs out at the end: the buffer of
    ``first`` must not go to ``three``, a later value of its layout, once
    ``two`` has read it (LayerNormalization's mean came out as the sum of
    squares so)."""
    module = parse_module(EARLY_OUTPUT)
    x = np.linspace(-1, 1, N, dtype=np.float32)
    got = rt.compile(module, targets=["gpu_opencl"])(x=x)
    np.testing.assert_array_equal(got["first"], -x)
    np.testing.assert_array_equal(got["last"], -(x * x))
