"""Passes composed in pipelines keep a module's results."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm.passes import PassManager

PROGRAM = """hpvm 1.0
module blur

func @weight(in v: f32, in limit: f32) -> f32 {
  if v > limit {
    return limit
  }
  let scaled: f32 = v * (f32(1.0) + f32(0.0))
  return scaled
}

func @smooth(in a: f32[N], in limit: f32, out b: f32[N]) {
  let i: i64 = instance_id(0)
  let unused: f32 = a[i] * f32(3.0)
  if i == 0 || i == instance_count(0) - 1 {
    b[i] = @weight(a[i], limit)
    return
  }
  let total: f32 = f32(0.0)
  for d in -1 .. 2 step 1 {
    total = total + @weight(a[i + d], limit)
  }
  if 2 > 3 {
    b[i] = f32(-100.0)
  }
  b[i] = total / f32(3.0)
}

func @double(in b: f32[N], out c: f32[N]) {
  c[instance_id(0)] = b[instance_id(0)] * f32(2.0)
}

graph @main(in a: f32[N], in limit: f32, out c: f32[N]) {
  node s = @smooth [N]
  node d = @double [N]
  node dead = @double [N]
  edge s.b -> d.b all-to-all
  edge s.b -> dead.b all-to-all
  in a -> s.a
  in limit -> s.limit
  out d.c -> c
}

root @main
"""


@pytest.mark.parametrize("pipeline", [
    "dce", "const-fold", "inline", "sequentialize",
    "inline,sequentialize,const-fold,dce",
    "const-fold,inline,const-fold,dce,sequentialize{nodes=s}",
])
def test_pipeline_preserves_results(pipeline):
    module = parse_module(PROGRAM)
    inputs = {"a": np.array([5.0, -1.0, 2.5, 9.0, 0.25, 3.0], np.float32),
              "limit": np.float32(4.0)}
    manager = PassManager(pipeline, verify_each=True)
    result = manager.run(module)
    np.testing.assert_array_equal(run_module(module, inputs)["c"],
                                  run_module(result, inputs)["c"])
    assert [name for name, _ in manager.timings] == [name for name, _ in manager.steps]


def test_full_pipeline_leaves_single_work_item_kernels():
    result = PassManager("inline,sequentialize,const-fold,dce").run(parse_module(PROGRAM))
    assert list(result.functions) == ["smooth", "double"]
    assert all(not n.replication for n in result.graphs["main"].nodes)
    assert [n.name for n in result.graphs["main"].nodes] == ["s", "d"]
