"""Which i64 values fit in 32 bits when every size does (hpvm.ir.narrow_values):
ids, neighbours, clamps and loop counters do; products of two sizes,
scalar parameters, i64 loads and counters that keep growing do not."""
from hpvm.ir.kernel import Binary, Const, Var
from hpvm.ir.narrow_values import NarrowValues
from hpvm.ir.text import parse_module
from hpvm.ir.types import I64

LIMIT = 2 ** 30

KERNELS = """hpvm 1.3
module narrow

func @stencil(in a: f32[H, W], in n: i64, in m: i64[H], out b: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  let left: i64 = max(x - 1, 0)
  let flat: i64 = y * W + x
  let half: i64 = flat / 2
  let given: i64 = n + 1
  let loaded: i64 = m[y]
  let s: f32 = f32(0.0)
  for k in 0 .. W step 1 {
    s = s + a[y, k]
  }
  let count: i64 = 0
  while count < n {
    count = count + 1
  }
  let twice: i64 = 2 * x
  let past: i64 = 2 * x + 3
  let wrapped: i64 = (x + 5) % 4
  b[y, x] = s + a[y, left]
}

graph @main() {
}

root @main
"""


def narrow(function: str = "stencil") -> NarrowValues:
    kernel = parse_module(KERNELS).function(function)
    return NarrowValues(kernel, {"H", "W"}, LIMIT)


def test_ids_neighbours_clamps_loop_counters_and_small_multiples_are_narrow():
    values = narrow()
    assert {"y", "x", "left", "k", "twice", "wrapped"} <= values.variables
    assert values.ranges["left"] == (0, LIMIT - 2)
    assert values.ranges["wrapped"] == (0, 3)
    assert values.ranges["k"] == (0, LIMIT - 1)


def test_products_of_sizes_parameters_i64_loads_and_growing_counters_are_not():
    values = narrow()
    assert not {"flat", "half", "given", "loaded", "count", "past"} & values.variables
    assert values.ranges["count"][1] == float("inf")


def test_an_expression_is_narrow_only_where_every_part_is():
    values = narrow()
    x, w = Var("x", I64), Var("W", I64)
    assert values.is_narrow(Binary("add", x, Const(1, I64)))
    assert values.is_narrow(Binary("sub", w, Const(1, I64)))
    assert not values.is_narrow(Binary("mul", x, w))
    assert not values.is_narrow(Binary("add", Var("flat", I64), Const(1, I64)))
    assert not values.is_narrow(Binary("add", x, Const(2 ** 31 - 10, I64)))  # may overflow
    assert not values.is_narrow(Binary("div", x, Var("n", I64)))  # divisor unknown
