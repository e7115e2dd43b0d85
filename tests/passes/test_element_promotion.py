"""Elements a loop alone updates kept in a variable while it runs
(element_promotion.py): a store of the element just before the loop
becomes the variable's first value, a load otherwise, and one store after
the loop; a loop that reaches the buffer at two elements, at an element
that moves as it runs, or through a call keeps its accesses."""
import pytest

from hpvm.ir.text import parse_module
from hpvm.ir.text.printer import print_stmts
from hpvm.passes.element_promotion import promoted

PROGRAM = """hpvm 1.0
module m

func @k(in a: f32[M, K], in b: f32[K, N], inout c: f32[M, N], inout d: f32[M, N]) {
  let i: i64 = 1
  let j: i64 = 2
BODY
}

graph @main(in a: f32[M, K], in b: f32[K, N], inout c: f32[M, N], inout d: f32[M, N]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  in c -> n.c
  in d -> n.d
  out n.c -> c
  out n.d -> d
}

root @main
"""


def promote(body: str) -> str:
    """The statements of ``@k`` with ``body`` after its two lets, each
    loop's elements promoted, as text."""
    function = parse_module(PROGRAM.replace("BODY", body)).function("k")
    return print_stmts(promoted(function.body, function), 1)


SUM = """  c[i, j] = f32(0.0)
  for k in 0 .. K step 1 {
    c[i, j] = c[i, j] + a[i, k] * b[k, j]
  }"""


def test_a_sum_stored_first_starts_from_the_stored_value():
    text = promote(SUM)
    assert """  let c_element: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    c_element = c_element + a[i, k] * b[k, j]
  }
  c[i, j] = c_element""" in text


def test_a_sum_into_the_element_as_it_was_starts_from_a_load():
    text = promote(SUM.replace("c[i, j] = f32(0.0)", "d[i, j] = f32(1.0)"))
    assert "d[i, j] = f32(1.0)\n  let c_element: f32 = c[i, j]\n" in text
    assert "c[i, j] = c_element" in text


def test_a_store_read_by_a_later_store_before_the_loop_stays():
    text = promote(SUM.replace("c[i, j] = f32(0.0)", "c[i, j] = f32(0.0)\n  d[i, j] = c[i, j]"))
    assert "c[i, j] = f32(0.0)\n  d[i, j] = c[i, j]\n  let c_element: f32 = c[i, j]" in text


@pytest.mark.parametrize("change", [
    ("c[i, j] = c[i, j] +", "c[i, j] = c[i, 0] +"),      # two elements of c
    ("c[i, j] = c[i, j] +", "c[i, k] = c[i, k] +"),      # an element that moves with k
    ("c[i, j] = c[i, j] +", "c[b2, j] = c[b2, j] +"),    # at an index the loop assigns
])
def test_loops_reaching_the_buffer_elsewhere_keep_their_accesses(change):
    body = SUM.replace(*change).replace("  for k in 0 .. K step 1 {",
                                        "  let b2: i64 = 0\n  for k in 0 .. K step 1 {\n"
                                        "    b2 = k")
    assert "c_element" not in promote(body)
