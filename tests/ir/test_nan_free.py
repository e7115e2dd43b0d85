"""hpvm.ir.nan_free: the variables and arrays of a kernel that never hold
NaN, which lets a float min/max take one instruction on the cpu."""
from hpvm.ir.kernel import Intrinsic, Var
from hpvm.ir.nan_free import is_nan_free, nan_free_names
from hpvm.ir.text import parse_module
from hpvm.ir.types import F32

KERNEL = """hpvm 1.3
module m
func @helper(inout t: f32[4]) {
  t[0] = f32(1.0)
}
func @k(in x: f32[N, K], in s: f32, out y: f32[N]) {
  let i: i64 = instance_id(0)
  let best: f32 = f32(1e30)
  let low: f32 = f32(-inf)
  let sum: f32 = f32(0.0)
  let first: f32 = x[i, 0]
  let scaled: f32 = s
  let picked: f32 = f32(0.0)
  private tile: f32[4] = undef
  private other: f32[4]
  private called: f32[4]
  private counts: i32[4]
  tile[0] = f32(3.0)
  for k in 0 .. K step 1 {
    best = min(best, x[i, k] + f32(1.0))
    low = max(abs(x[i, k]), low)
    sum = sum + best
    first = min(first, x[i, k])
    tile[1] = min(tile[0], x[i, k])
    other[k % 4] = x[i, k]
    picked = select(k > 2, f32(i), floor(best))
  }
  @helper(called)
  counts[0] = i32(7)
  y[i] = best + low + sum + first + scaled + tile[1] + other[0] + picked + called[0]
}
graph @main() {
}
root @main
"""


def test_accumulators_of_min_and_max_from_a_number_are_free_of_nan():
    module = parse_module(KERNEL)
    names = nan_free_names(module.functions["k"])
    # started from numbers and only ever combined by min/max, casts, selects
    assert {"best", "low", "tile", "picked", "counts"} <= names
    # a sum of numbers may be inf - inf; a load, a parameter, an array
    # passed to a call may hold NaN already
    assert not names & {"sum", "first", "scaled", "other", "called", "x", "s", "y"}


def test_one_operand_free_of_nan_makes_min_and_max_free_of_nan():
    names = {"best"}
    best, x = Var("best", F32), Var("x", F32)
    assert is_nan_free(Intrinsic("min", (x, best)), names)
    assert is_nan_free(Intrinsic("max", (best, x)), names)
    assert not is_nan_free(Intrinsic("min", (x, x)), names)
    assert not is_nan_free(Intrinsic("sqrt", (best,)), names)
