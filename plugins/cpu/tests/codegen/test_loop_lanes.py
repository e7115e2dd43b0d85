"""Vector lanes along a kernel's loops (codegen/loop_lanes.py): row
reductions read a row per instance, so their loops are vectorised along
the row, not across instances; kernels whose instances read adjacent
elements keep their lane strips, wider ones where the strips walk down
columns.  Each checked against the interpreter."""
import numpy as np
import pytest

from hpvm.ir.uniformity import Uniformity
from hpvm_cpu.codegen.lanes import strip_body
from hpvm_cpu.codegen.loop_lanes import WIDEN, lanes_along_loops, strip_width

from .test_lanes import MATMUL, kernel, run_both

ROW_SUM = """
func @k(in restrict x: f32[M, N], out restrict y: f32[M]) {
  let row: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  let top: f32 = f32(-1.0e30)
  for a in 0 .. N step 1 [reduce acc: add, reduce top: max] {
    let v: f32 = x[row, a]
    acc = acc + v
    top = max(top, v)
  }
  y[row] = acc + top
}
"""

ROW_SUM_UNPROMISED = ROW_SUM.replace(" [reduce acc: add, reduce top: max]", "")

COLUMN_SUM = """
func @k(in restrict x: f32[M, N], out restrict y: f32[N]) {
  let column: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for a in 0 .. M step 1 [reduce acc: add] {
    acc = acc + x[a, column]
  }
  y[column] = acc
}
"""


ROW_PRODUCTS = """
func @k(in restrict a: f32[M, K], in restrict b: f32[K, N], inout restrict c: f32[M, N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. N step 1 {
    c[i, j] = c[i, j] * f32(0.5)
  }
  for k in 0 .. K step 1 {
    for j in 0 .. N step 1 {
      c[i, j] = c[i, j] + a[i, k] * b[k, j]
    }
  }
}
"""


RANK_UPDATE = """
func @k(inout a: f32[M, N], in u: f32[M], in v: f32[N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. N step 1 {
    a[i, j] = a[i, j] + u[i] * v[j]
  }
}
"""
"""PolyBench's gemver: each row plus its element of u times v. u[i] is
adjacent across instances but read once per row."""


def along(text, dim=0):
    function = kernel(text)
    return lanes_along_loops(function, Uniformity(function, (dim,)), dim)


def test_a_row_reduction_runs_its_lanes_along_the_row():
    assert along(ROW_SUM)
    assert strip_body(kernel(ROW_SUM), {0: 8}) is None


@pytest.mark.parametrize("text", [COLUMN_SUM, ROW_SUM_UNPROMISED])
def test_instances_reading_adjacent_elements_or_unpromised_folds_keep_strips(text):
    assert not along(text)
    assert strip_body(kernel(text), {0: 8}) is not None


def test_a_nest_whose_innermost_loops_walk_rows_runs_them_in_lanes():
    """Each instance a row of a product (``for k: for j: c[i, j] += a[i, k]
    * b[k, j]``): the k loop's work is all in the j loop, which walks c
    and b along their rows (a[i, k] one element throughout); across
    instances they are a row apart."""
    assert along(ROW_PRODUCTS)
    assert strip_body(kernel(ROW_PRODUCTS), {0: 8}) is None


def test_a_value_read_once_a_row_leaves_the_lanes_along_the_row():
    """In lanes across instances each step of j would touch M rows apart
    (gemver's rank update at 4096^2 on two cores: 65 -> 7.7 ms)."""
    assert along(RANK_UPDATE)
    assert strip_body(kernel(RANK_UPDATE), {0: 8}) is None


@pytest.mark.parametrize("m, n", [(1, 3), (5, 37)])
def test_a_rank_update_along_its_rows_matches_the_interpreter(m, n):
    rng = np.random.default_rng(m)
    a, u, v = (rng.standard_normal(shape, dtype=np.float32) for shape in ((m, n), (m,), (n,)))
    run_both(RANK_UPDATE, {"a": a, "u": u, "v": v}, (m,), lanes=8)


@pytest.mark.parametrize("m", [1, 5, 19])
def test_rows_of_a_product_in_lanes_match_the_interpreter(m):
    rng = np.random.default_rng(m)
    a, b, c = (rng.standard_normal(shape, dtype=np.float32) for shape in ((m, 7), (7, 37), (m, 37)))
    run_both(ROW_PRODUCTS, {"a": a, "b": b, "c": c}, (m,), lanes=8)


def test_a_matmul_keeps_lanes_across_its_columns():
    assert not along(MATMUL, 1)


@pytest.mark.parametrize("m, n", [(5, 37), (3, 128), (1, 1)])
@pytest.mark.parametrize("text", [ROW_SUM, COLUMN_SUM])
def test_both_directions_match_the_interpreter(text, m, n):
    x = np.random.default_rng(m + n).standard_normal((m, n), dtype=np.float32)
    size = m if text is ROW_SUM else n
    run_both(text, {"x": x, "y": np.zeros(size, np.float32)}, (size,), lanes=8)


@pytest.mark.parametrize("text, dim, wide", [
    (COLUMN_SUM, 0, True),            # x[a, column]: a row apart each step
    (MATMUL, 1, True),                # b[k, j] down the columns; a[i, k] is uniform
    (ROW_SUM_UNPROMISED, 0, False),   # x[row, a]: instances a row apart
])
def test_strips_walking_down_columns_are_wider(text, dim, wide):
    function = kernel(text)
    width = strip_width(function, Uniformity(function, (dim,)), dim, 8)
    assert width == (8 * WIDEN if wide else 8)


@pytest.mark.parametrize("n", [5, 31, 32, 33, 41, 70])
def test_wide_then_narrow_strips_then_single_columns_match_the_interpreter(n):
    x = np.random.default_rng(n).standard_normal((6, n), dtype=np.float32)
    run_both(COLUMN_SUM, {"x": x, "y": np.zeros(n, np.float32)}, (n,), lanes=8)
