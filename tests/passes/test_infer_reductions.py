"""infer-reductions: plain loops folding a variable with an exact op
(integer ops, float min/max) get the promise reduce() writes; float sums
keep their order; the cpu then folds them in vector lanes and agrees with
the interpreter on ragged lengths, NaNs and extremes in the last column."""
import numpy as np
import pytest

import hpvm
from hpvm.ir.kernel import For, Reduction
from hpvm.ir.text import parse_module
from hpvm.ir.visit import walk
from hpvm.passes import run_pipeline
from hpvm.testing import usable_targets

KERNEL = """hpvm 1.3
module m
func @k(in x: f32[N, K], in c: i32[N, K], out y: f32[N], out z: i32[N], out s: f32[N]) {
  let i: i64 = instance_id(0)
  let best: f32 = f32(-inf)
  let low: f32 = x[i, 0]
  let count: i32 = i32(0)
  let bits: i32 = i32(0)
  let total: f32 = f32(0.0)
  let last: f32 = f32(0.0)
  let peek: i32 = i32(0)
  for k in 0 .. K step 1 {
    best = max(best, x[i, k] * f32(2.0))
    low = min(x[i, k], low)
    count = count + c[i, k]
    bits = bits ^ c[i, k]
    total = total + x[i, k]
    last = max(last, x[i, k])
    peek = max(peek, c[i, k])
    total = total + last
    for r in 0 .. 2 step 1 {
      let inner: i32 = c[i, k]
      inner = inner + i32(r)
      peek = max(peek, inner)
    }
  }
  let seen: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    seen = max(seen, x[i, k])
    z[i] = i32(k)
  }
  y[i] = best + low + total + seen
  z[i] = count + bits + peek
  s[i] = total
}
graph @main(in x: f32[N, K], in c: i32[N, K], out y: f32[N], out z: i32[N], out s: f32[N]) {
  node n = @k [N]
  in x -> n.x
  in c -> n.c
  out n.y -> y
  out n.z -> z
  out n.s -> s
}
root @main
"""


def loops(module):
    return [s for s in walk(module.functions["k"].body) if isinstance(s, For)]


def test_exact_folds_are_marked_and_float_sums_keep_their_order():
    outer, inner, stored = loops(run_pipeline(parse_module(KERNEL), "infer-reductions"))
    assert set(outer.reduce) == {Reduction("best", "max"), Reduction("low", "min"),
                                 Reduction("count", "add"), Reduction("bits", "xor"),
                                 Reduction("peek", "max")}
    # total: a float sum; last: read outside its updates; inner: declared in the loop
    assert inner.reduce == (Reduction("peek", "max"),)
    # a store in the body: its iterations' order shows
    assert stored.reduce == ()


def test_a_loop_marked_already_is_left_as_it_is():
    once = run_pipeline(parse_module(KERNEL), "infer-reductions")
    assert run_pipeline(once, "infer-reductions") == once


ROW_MAXIMA = """hpvm 1.3
module m
func @k(in a: f32[N, K], in c: i32[N, K], out y: f32[N], out z: i32[N]) {
  let i: i64 = instance_id(0)
  let best: f32 = f32(-3e38)
  let least: f32 = a[i, 0]
  let total: i32 = i32(0)
  for k in 0 .. K step 1 {
    best = max(best, a[i, k])
    least = min(least, a[i, k] + f32(1.0))
    total = total + c[i, k] * i32(3)
  }
  y[i] = best - least
  z[i] = total
}
graph @main(in a: f32[N, K], in c: i32[N, K], out y: f32[N], out z: i32[N]) {
  node n = @k [N]
  in a -> n.a
  in c -> n.c
  out n.y -> y
  out n.z -> z
}
root @main
"""


@pytest.mark.parametrize("target", usable_targets(("cpu",)))
@pytest.mark.parametrize("k", [1, 7, 16, 33, 1021])
def test_folds_in_lanes_agree_with_the_interpreter(target, k):
    module = run_pipeline(parse_module(ROW_MAXIMA), "infer-reductions")
    assert len(loops(module)[0].reduce) == 3
    rng = np.random.default_rng(k)
    a = rng.standard_normal((29, k)).astype(np.float32)
    a[:, -1] = 50.0  # the largest in the last column, which a dropped remainder misses
    a[3, ::3] = np.nan
    a[5, :] = np.nan  # every value NaN: best stays where it started, least is NaN
    a[7, 0] = -60.0  # least starts from the first column
    c = rng.integers(-2 ** 31, 2 ** 31 - 1, (29, k), dtype=np.int64).astype(np.int32)  # wraps
    expected = hpvm.compile(module, targets=["interp"])(a=a, c=c)
    got = hpvm.compile(module, targets=[target])(a=a, c=c)
    np.testing.assert_array_equal(got["y"], expected["y"])
    np.testing.assert_array_equal(got["z"], expected["z"])
    least = min(a[0, 0], np.nanmin(a[0] + np.float32(1.0)))
    assert got["y"][0] == np.float32(50.0) - least


@pytest.mark.parametrize("target", usable_targets(("cpu",)))
@pytest.mark.parametrize("options", [{}, {"register_tiles": False}])
def test_the_cpu_infers_reductions_by_default(target, options):
    exe = hpvm.compile(parse_module(ROW_MAXIMA), targets=[target], options=options)
    text = exe.artifacts[target].files["module.hpvm"].decode()
    assert "[reduce best: max, reduce least: min, reduce total: add]" in text


HELPERS = """hpvm 1.3
module m
func @read(in x: f32[N, K], i: i64, k: i64) -> f32 {
  return x[i, k]
}
func @note(inout log: f32[N], i: i64, v: f32) -> f32 {
  log[i] = v
  return v
}
func @k(in x: f32[N, K], inout log: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let a: f32 = f32(-inf)
  let b: f32 = f32(-inf)
  for k in 0 .. K step 1 {
    a = max(a, @read(x, i, k))
  }
  for k in 0 .. K step 1 {
    b = max(b, @note(log, i, x[i, k]))
  }
  y[i] = a + b
}
graph @main() {
}
root @main
"""


def test_a_call_of_a_helper_that_stores_keeps_the_order():
    reading, noting = loops(run_pipeline(parse_module(HELPERS), "infer-reductions"))
    assert reading.reduce == (Reduction("a", "max"),)
    assert noting.reduce == ()
