"""parallel-reduce's tree form after the last reduction: a loop of
independent iterations is shared by the lanes (a layer norm's last pass),
a reduction loop may store what that loop reads back in the same lanes (a
softmax's exponentials), anything else runs in lane 0; and ``lowered``
picks only kernels lowered from tensor ops."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.kernel import For, If
from hpvm.ir.text import parse_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.parallel_reduce import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets

ROWS = """
func @centre(in a: f32[R, N], out b: f32[R, N]) {
  let r: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[r, i]
  }
  let mean: f32 = acc * f32(0.125)
  for i in 0 .. N step 1 [ivdep] {
    b[r, i] = a[r, i] - mean
  }
}

func @normalise(in a: f32[R, N], out b: f32[R, N]) {
  let r: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [ivdep, reduce acc: add] {
    let e: f32 = exp(a[r, i])
    b[r, i] = e
    acc = acc + e
  }
  for j in 0 .. N step 1 [ivdep] {
    b[r, j] = b[r, j] / acc
  }
}

func @reversed(in a: f32[R, N], out b: f32[R, N]) {
  let r: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [ivdep, reduce acc: add] {
    b[r, i] = a[r, i]
    acc = acc + a[r, i]
  }
  for j in 0 .. N step 1 [ivdep] {
    b[r, j] = b[r, N - 1 - j] / acc
  }
}

func @twice(in a: f32[R, N], out b: f32[R, N], out c: f32[R, N]) {
  let r: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[r, i]
  }
  for i in 0 .. N step 1 [ivdep] {
    b[r, i] = a[r, i] - acc
  }
  for i in 0 .. N step 1 [ivdep] {
    c[r, i] = b[r, N - 1 - i]
  }
}
"""


def module(name):
    outputs = "out b: f32[R, N], out c: f32[R, N]" if name == "twice" else "out b: f32[R, N]"
    ports = "  out k.b -> b\n  out k.c -> c" if name == "twice" else "  out k.b -> b"
    return parse_module(f"hpvm 1.1\nmodule t\n{ROWS}\ngraph @main(in a: f32[R, N], {outputs}) {{\n"
                        f"  node k = @{name} [R]\n  in a -> k.a\n{ports}\n}}\nroot @main\n")


def tree(name):
    return run_pipeline(module(name), "parallel-reduce{lanes=4}", verify_each=True)


def same_results(name):
    a = np.random.default_rng(1).standard_normal((3, 10)).astype(np.float32)
    expected = Interpreter(module(name)).run(a=a)
    assert_outputs_close(Interpreter(tree(name)).run(a=a), expected, 1e-6, 1e-6)
    if "gpu_opencl" in usable_targets():
        assert_outputs_close(hpvm.compile(tree(name), ["gpu_opencl"])(a=a), expected, 1e-6, 1e-6)


def body_of(result):
    node = result.root_graph.node("k")
    return result.function(node.body.function).body


@pytest.mark.parametrize("name", ["centre", "normalise"])
def test_the_lanes_share_the_loop_after_the_reductions(name):
    body = body_of(tree(name))
    last = body[-1]
    assert isinstance(last, For) and last.step == 4 and "lane" in str(last.start)
    same_results(name)


def test_a_tail_of_two_loops_runs_in_lane_zero():
    assert isinstance(body_of(tree("twice"))[-1], If)
    same_results("twice")


def test_stores_read_back_elsewhere_keep_the_node_as_it_is():
    assert eligible_nodes(module("reversed"), "tree") == []
    with pytest.raises(PassError, match="stores in its last reduction loop 'i'"):
        run_pipeline(module("reversed"), "parallel-reduce{nodes=k}")


def test_lowered_picks_only_kernels_lowered_from_tensor_ops():
    assert tree("centre").root_graph.node("k").attributes.get("group") == (1, 4)
    untouched = run_pipeline(module("centre"), "parallel-reduce{lanes=4 lowered=true}")
    assert "group" not in untouched.root_graph.node("k").attributes
