"""whole_outputs: which outputs a node writes whole (so the static schedule
neither clears them nor makes large ones afresh in every run), and the
runs that follow from it: still exact where a kernel writes only part of
an output or reads it."""
import numpy as np
import pytest

from hpvm.ir.text import parse_module
from hpvm.runtime import compile, static_planner
from hpvm.runtime.whole_writes import whole_outputs

KERNELS = """hpvm 1.1
module w

func @grid(in x: f32[H, W], out y: f32[H, W]) {
  let r: i64 = instance_id(0)
  let c: i64 = instance_id(1)
  y[r, c] = x[r, c] * f32(2.0)
}

func @flat(in x: f32[H, W], out y: f32[H, W]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] + f32(1.0)
}

func @reads_back(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = y[i] + x[i]
}

func @half(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  if i < N / 2 {
    y[i] = x[i]
  }
}

func @after_return(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  if i == 0 {
    return
  }
  y[i] = x[i]
}

func @both(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  if i < N / 2 {
    y[i] = x[i]
  } else {
    y[i] = x[i] * f32(2.0)
  }
}

func @one_branch(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  if i == 0 {
    return
  } else {
    y[i] = x[i]
  }
}

func @moved(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  i = i / 2
  y[i] = x[i]
}

func @channels(in x: f32[N], out y: f32[3, N]) {
  let i: i64 = instance_id(0)
  for k in 0 .. 3 step 1 {
    y[k, i] = x[i] * f32(2.0)
  }
  y[0, i] = y[0, i] + y[2, i]
}

func @channel_sums(in x: f32[N], out y: f32[3, N]) {
  let i: i64 = instance_id(0)
  for k in 0 .. 3 step 1 {
    y[k, i] = y[k, i] + x[i]
  }
}

graph @main(in x: f32[H, W], in v: f32[N], out a: f32[H, W], out b: f32[H, W],
            out c: f32[N], out d: f32[N], out e: f32[N], out f: f32[N], out g: f32[N],
            out h: f32[N], out p: f32[3, N], out q: f32[3, N]) {
  node grid = @grid [H, W]
  node flat = @flat [H * W]
  node reads_back = @reads_back [N]
  node half = @half [N]
  node after_return = @after_return [N]
  node moved = @moved [N]
  node both = @both [N]
  node one_branch = @one_branch [N]
  node channels = @channels [N]
  node channel_sums = @channel_sums [N]
  in x -> grid.x
  in x -> flat.x
  in v -> reads_back.x
  in v -> half.x
  in v -> after_return.x
  in v -> moved.x
  in v -> both.x
  in v -> one_branch.x
  in v -> channels.x
  in v -> channel_sums.x
  out grid.y -> a
  out flat.y -> b
  out reads_back.y -> c
  out half.y -> d
  out after_return.y -> e
  out moved.y -> f
  out both.y -> g
  out one_branch.y -> h
  out channels.y -> p
  out channel_sums.y -> q
}

root @main
"""


@pytest.mark.parametrize("node, replication, shape, whole", [
    ("grid", (4, 6), (4, 6), True),
    ("grid", (4, 5), (4, 6), False),      # fewer instances than elements
    ("flat", (24,), (4, 6), True),        # a flat store over as many instances
    ("reads_back", (8,), (8,), False),    # relies on the zeros
    ("half", (8,), (8,), False),          # stores under a branch
    ("after_return", (8,), (8,), False),  # some instances return first
    ("moved", (8,), (8,), False),         # the index variable changes
    ("both", (8,), (8,), True),           # stored in both branches of an if
    ("one_branch", (8,), (8,), False),    # one branch returns without storing
    ("channels", (8,), (3, 8), True),     # a loop over the channels, read after
    ("channels", (7,), (3, 8), False),    # fewer instances than elements
    ("channel_sums", (8,), (3, 8), False),  # relies on the zeros
])
def test_outputs_written_whole(node, replication, shape, whole):
    module = parse_module(KERNELS)
    found = whole_outputs(module, module.root_graph.node(node), replication, {"y": shape})
    assert found == ({"y"} if whole else set())


def test_tensor_ops_write_their_outputs_whole():
    from hpvm.ir.tensor_ops.testing import example_nodes
    node, _ = example_nodes()["conv2d"]
    module = parse_module(KERNELS)
    assert whole_outputs(module, node, (1,), {"y": (2, 6, 6, 3)}) == {"y"}


@pytest.mark.parametrize("per_run_bytes", [static_planner.PER_RUN_BYTES, 0])
def test_runs_stay_exact_with_outputs_made_uncleared(per_run_bytes, monkeypatch):
    monkeypatch.setattr(static_planner, "PER_RUN_BYTES", per_run_bytes)
    exe = compile(parse_module(KERNELS), targets=["cpu"])
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 6)).astype(np.float32)
        v = rng.standard_normal(8).astype(np.float32)
        out = exe(x=x, v=v)
        np.testing.assert_array_equal(out["a"], x * 2)
        np.testing.assert_array_equal(out["b"], x + 1)
        np.testing.assert_array_equal(out["c"], v)
        np.testing.assert_array_equal(out["d"], np.where(np.arange(8) < 4, v, 0))
        np.testing.assert_array_equal(out["e"], np.where(np.arange(8) > 0, v, 0))
        moved = np.zeros(8, np.float32)
        moved[:4] = v[:4]
        np.testing.assert_array_equal(out["f"], moved)
        np.testing.assert_array_equal(out["g"], np.where(np.arange(8) < 4, v, v * 2))
        np.testing.assert_array_equal(out["h"], np.where(np.arange(8) > 0, v, 0))


def test_a_large_intermediate_written_whole_stays_in_the_arena(monkeypatch):
    """Made once, not per run: no page faults or clearing in every run."""
    monkeypatch.setattr(static_planner, "PER_RUN_BYTES", 0)
    text = """hpvm 1.1
module chain

func @twice(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i] * f32(2.0)
}

graph @main(in x: f32[N], out y: f32[N]) {
  node first = @twice [N]
  node second = @twice [N]
  edge first.y -> second.x all-to-all
  in x -> first.x
  out second.y -> y
}

root @main
"""
    exe = compile(parse_module(text), targets=["cpu"])
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(exe(x=x)["y"], x * 4)
    (schedule,) = exe._static_program().schedules.idle()
    assert len(schedule.fresh) == 1   # the output; the intermediate is an arena buffer
    assert not any(step.zero for step in schedule.steps)
