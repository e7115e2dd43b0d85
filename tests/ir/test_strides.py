"""Index strides (hpvm.ir.strides): the coefficient of a loop variable or
an instance id in index expressions, through variables declared once."""
from hpvm.ir.kernel import Load
from hpvm.ir.strides import IndexStrides, instance_of, loop_variable
from hpvm.ir.text import parse_module
from hpvm.ir.visit import walk

KERNEL = """
func @k(in x: f32[M, N], in flat: f32[L], out y: f32[M]) {
  let row: i64 = instance_id(0)
  let base: i64 = row * 128 + 3
  let moving: i64 = 0
  let acc: f32 = f32(0.0)
  for a in 0 .. N step 1 {
    let twice: i64 = a * 2
    acc = acc + x[row, a] + flat[base + a] + flat[twice - base] + flat[a * row]
    acc = acc + flat[moving] + flat[base / 2 + a]
    moving = moving + 1
  }
  y[row] = acc
}
"""


def strides():
    module = parse_module("hpvm 1.0\nmodule m\n" + KERNEL + "\ngraph @main() {\n}\nroot @main\n")
    function = module.functions["k"]
    loads = [e for e in walk(function.body) if isinstance(e, Load)]
    return IndexStrides(function.body), loads


def test_coefficients_along_the_loop_and_across_instances():
    table, loads = strides()
    along, across = loop_variable("a"), instance_of(0)
    got = [(table.element_stride(load.indices, along), table.element_stride(load.indices, across))
           for load in loads]
    assert got == [
        (1, None),        # x[row, a]: along the row; across instances another index moves
        (1, 128),         # flat[row * 128 + 3 + a]
        (2, -128),        # flat[a * 2 - base]
        (None, None),     # flat[a * row]: a product of two moving terms
        (None, None),     # flat[moving]: assigned in the loop
        (1, None),        # flat[base / 2 + a]: a division of the instance's term
    ]
