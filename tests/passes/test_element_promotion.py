"""Elements a loop alone updates kept in a variable while it runs
(element_promotion.py): a store of the element just before the loop
becomes the variable's first value, a load otherwise, and one store after
the loop; a loop that reaches the buffer at two elements, at an element
that moves as it runs, or through a call keeps its accesses; the pass
element-promotion does it in every loop, where the loop's other accesses
of the buffer are never to the element, and computes the same."""
import numpy as np
import pytest

from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.text.printer import print_stmts
from hpvm.passes import run_pipeline
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


# The pass element-promotion: every loop of every kernel function.

TRIANGLE = """hpvm 1.0
module m

func @k(in a: f32[M, M], inout b: f32[M, N], in alpha: f32) {
  for j in 0 .. N step 1 {
    for i in 0 .. M step 1 {
      for k in i + 1 .. M step 1 {
        b[i, j] = b[i, j] + a[k, i] * b[k, j]
      }
AFTER
    }
  }
}

graph @main(in a: f32[M, M], inout b: f32[M, N], in alpha: f32) {
  node n = @k
  in a -> n.a
  in b -> n.b
  in alpha -> n.alpha
  out n.b -> b
}

root @main
"""
"""PolyBench's trmm: each element sums the rows below it in its column."""


def promoted_module(text: str):
    """``text`` parsed, and after element-promotion."""
    module = parse_module(text)
    return module, run_pipeline(module, "element-promotion", verify_each=True)


def same_results(module, changed, m: int, n: int = 5) -> None:
    rng = np.random.default_rng(m)
    data = dict(a=rng.standard_normal((m, m), np.float32),
                b=rng.standard_normal((m, n), np.float32), alpha=np.float32(0.5))
    want = Interpreter(module).run(**{k: np.copy(v) for k, v in data.items()})
    got = Interpreter(changed).run(**{k: np.copy(v) for k, v in data.items()})
    np.testing.assert_array_equal(got["b"], want["b"])


@pytest.mark.parametrize("m", [1, 2, 6])
def test_an_element_apart_from_the_rows_the_loop_reads_is_kept_in_a_variable(m):
    module, changed = promoted_module(TRIANGLE.replace("AFTER", ""))
    text = print_module(changed)
    assert """      if i + 1 < M {
        let b_element: f32 = b[i, j]
        for k in i + 1 .. M step 1 {
          b_element = b_element + a[k, i] * b[k, j]
        }
        b[i, j] = b_element
      }""" in text
    same_results(module, changed, m)


def test_a_loop_followed_by_a_store_of_its_element_needs_no_test_that_it_runs():
    module, changed = promoted_module(
        TRIANGLE.replace("AFTER", "      b[i, j] = alpha * b[i, j]"))
    text = print_module(changed)
    assert "if " not in text and "b_element = b_element + a[k, i] * b[k, j]" in text
    same_results(module, changed, 4)


@pytest.mark.parametrize("change", [
    ("for k in i + 1 .. M", "for k in i .. M"),            # k = i reads the element
    ("b[k, j]", "b[i, 0]"),                                # column 0 is column j once
    ("b[k, j]", "b[k - 1, j]"),                            # the row above, at k = i + 1
    ("a[k, i] * b[k, j]", "a[k, i] * @f(b, k)"),            # a helper reads b
])
def test_a_loop_that_may_reach_the_element_otherwise_keeps_its_accesses(change):
    text = TRIANGLE.replace("AFTER", "").replace(*change)
    if "@f(b, k)" in text:
        text = text.replace("func @k", "func @f(in b: f32[M, N], in k: i64) -> f32 {\n"
                            "  return b[k, 0]\n}\n\nfunc @k")
    assert "b_element" not in print_module(promoted_module(text)[1])


def test_an_element_is_kept_in_the_outermost_loop_that_leaves_it_in_place():
    module, changed = promoted_module("""hpvm 1.0
module m

func @k(in x: f32[M, N], inout s: f32[2]) {
  for k in 0 .. 3 step 1 {
    for l in 0 .. N step 1 {
      s[1] = s[1] + x[k, l]
    }
  }
}

graph @main(in x: f32[M, N], inout s: f32[2]) {
  node n = @k
  in x -> n.x
  in s -> n.s
  out n.s -> s
}

root @main
""")
    assert print_stmts(changed.function("k").body, 1) == """  let s_element: f32 = s[1]
  for k in 0 .. 3 step 1 {
    for l in 0 .. N step 1 {
      s_element = s_element + x[k, l]
    }
  }
  s[1] = s_element"""
    data = dict(x=np.arange(12, dtype=np.float32).reshape(3, 4), s=np.ones(2, np.float32))
    np.testing.assert_array_equal(Interpreter(changed).run(**data)["s"],
                                  Interpreter(module).run(**data)["s"])
