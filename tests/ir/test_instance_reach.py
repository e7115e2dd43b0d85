"""How far an index reaches from the instance: offsets by constants and
constant loops, clamps into the replication, variables through every
value they are given; None wherever a bound is not known."""
import pytest

from hpvm.ir.instance_reach import InstanceReach
from hpvm.ir.kernel import Store, Var
from hpvm.ir.text import parse_module
from hpvm.ir.types import I64
from hpvm.ir.visit import walk

KERNEL = """hpvm 1.0
module reach

func @k(in a: f32[H, W], out b: f32[{n}, H, W]) {{
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  let up: i64
  up = y - 1
  let moved: i64 = y
  moved = y + 3
  let grows: i64 = y
  grows = grows + 1
  let hi: i64 = H - 1
{stores}
}}

graph @main(in a: f32[H, W], out b: f32[{n}, H, W]) {{
  node k = @k [H, W]
  in a -> k.a
  out k.b -> b
}}

root @main
"""

CASES = [
    ("y", 0, 0), ("x", 0, None), ("x", 1, 0), ("y + 2", 0, 2), ("2 + y", 0, 2), ("y - 2", 0, 2),
    ("min(max(y - 2, 0), H - 1)", 0, 2), ("max(0, min(H - 1, y + 1))", 0, 1),
    ("min(max(y - 2, 0), hi)", 0, 2), ("min(y + 1, H - 2)", 0, 1),
    ("min(y + 1, H)", 0, None),          # H itself may lie past the last instance
    ("max(y - 1, 1)", 0, None), ("min(max(y, 0), W - 1)", 0, None),
    ("up", 0, 1), ("moved", 0, 3), ("grows", 0, None), ("y * 2", 0, None), ("H - 1 - y", 0, None),
    ("y + d", 0, 2), ("y + d - 1", 0, 3),
]


@pytest.mark.parametrize("index, dim, expected", CASES)
def test_reach_of_an_index(index, dim, expected):
    store = f"  for d in -2 .. 1 step 1 {{\n    b[0, {index}, x] = a[y, x]\n  }}"
    module = parse_module(KERNEL.format(n=1, stores=store))
    function = module.function("k")
    node = module.graph("main").node("k")
    found = next(n for n in walk(function.body) if isinstance(n, Store))
    reach = InstanceReach(function.body, tuple(node.replication))
    assert reach.reach(found.indices[1], dim) == expected


def test_a_loop_variable_of_two_loops_has_no_magnitude():
    stores = ("  for d in 0 .. 2 step 1 {\n    b[0, y + d, x] = a[y, x]\n  }\n"
              "  for d in 0 .. 9 step 1 {\n    b[0, y, x] = a[y, x]\n  }")
    function = parse_module(KERNEL.format(n=1, stores=stores)).function("k")
    assert InstanceReach(function.body, ()).magnitude(Var("d", I64)) is None
