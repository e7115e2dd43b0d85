"""Row tiles (row_tiles.py): a strip whose lanes each walk their own row
along a loop copies TILE x TILE tiles and reads them across the lanes;
every lane's chain keeps the program's order, so row sums equal the
interpreter's bit for bit on ragged lengths; reads adjacent across the
lanes, of a buffer the kernel writes, or under strips of rows stay as
they were."""
import numpy as np
import pytest

from hpvm.ir.kernel import ArrayDecl, For, Load
from hpvm.ir.text import parse_module
from hpvm.ir.visit import walk
from hpvm_cpu.codegen.lanes import strip_body
from hpvm_cpu.codegen.row_tiles import TILE
from hpvm_cpu.codegen.testing import run_cpu, run_reference

ROWS = """hpvm 1.3
module m
func @k(in a: f32[M, K], in x: f32[K], out sums: f32[M], out dots: f32[M],
        out cols: f32[K]) {
  let i: i64 = instance_id(0)
  let s: f32 = f32(0.0)
  let d: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    s = s + a[i, k]
    d = d + a[i, k] * x[k]
  }
  sums[i] = s
  dots[i] = d
}
graph @main() {
}
root @main
"""

COLUMNS = """hpvm 1.3
module m
func @k(in a: f32[M, K], out cols: f32[K]) {
  let j: i64 = instance_id(0)
  let s: f32 = f32(0.0)
  for i in 0 .. M step 1 {
    s = s + a[i, j]
  }
  cols[j] = s
}
graph @main() {
}
root @main
"""

IN_PLACE = """hpvm 1.3
module m
func @k(inout a: f32[M, K], out sums: f32[M]) {
  let i: i64 = instance_id(0)
  let s: f32 = f32(0.0)
  for k in 1 .. K step 1 {
    s = s + a[i, k - 1]
    a[i, k] = s
  }
  sums[i] = s
}
graph @main() {
}
root @main
"""


def tiles(text, block):
    body = strip_body(parse_module(text).functions["k"], block)
    return [s for s in walk(body) if isinstance(s, ArrayDecl) and s.name.startswith("row_tile")]


def test_reads_along_each_lanes_row_are_tiled_once_per_buffer():
    found = tiles(ROWS, {0: 16})
    assert [t.shape for t in found] == [(TILE, TILE)]  # a[i, k], read twice; x[k] is shared
    assert tiles(COLUMNS, {0: 16}) == []  # adjacent across the lanes already
    assert tiles(ROWS, {0: 4}) == []  # fewer lanes than a tile


def test_a_buffer_the_kernel_writes_is_read_as_it_is():
    body = strip_body(parse_module(IN_PLACE).functions["k"], {0: 8})
    assert body is None or not any(isinstance(s, ArrayDecl) and s.name.startswith("row_tile")
                                   for s in walk(body))


@pytest.mark.parametrize("m, k", [(37, 1), (16, 7), (45, 8), (33, 9), (64, 61), (8, 130)])
@pytest.mark.parametrize("lanes", [8, 16])
def test_tiled_rows_match_the_interpreter_in_the_order_written(m, k, lanes):
    module = parse_module(ROWS)
    rng = np.random.default_rng(m * k)
    args = {"a": rng.standard_normal((m, k)).astype(np.float32) * 1e3,
            "x": rng.standard_normal(k).astype(np.float32)}
    args["a"][1, ::2], args["a"][1, 1::2] = 1e8, 3.0  # rounding depends on the order of the adds
    got = run_cpu(module, "k", args, (m,), threads=2, options={"lanes": lanes})
    want = run_reference(module, "k", args, (m,))
    np.testing.assert_array_equal(got["sums"], want["sums"])
    np.testing.assert_allclose(got["dots"], want["dots"], rtol=1e-5, atol=1e-2)


def test_the_in_place_kernel_matches_the_interpreter():
    module = parse_module(IN_PLACE)
    a = np.random.default_rng(1).standard_normal((40, 21)).astype(np.float32)
    got = run_cpu(module, "k", {"a": a.copy()}, (40,), options={"lanes": 8})
    want = run_reference(module, "k", {"a": a.copy()}, (40,))
    for name in ("a", "sums"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, err_msg=name)


INNER = """hpvm 1.3
module m
func @k(in a: f32[M, K], in w: i64[M], out sums: f32[M]) {
  let i: i64 = instance_id(0)
  let s: f32 = f32(0.0)
  for k in 0 .. K - 2 step 1 {
    for r in 0 .. w[i] % 3 step 1 {
      s = s + a[i, k + r] * f32(r + 1)
    }
    s = s + a[w[i], k]
  }
  sums[i] = s
}
graph @main() {
}
root @main
"""


def test_reads_indexed_by_inner_loops_or_memory_are_read_where_they_are():
    assert tiles(INNER, {0: 8}) == []
    module = parse_module(INNER)
    rng = np.random.default_rng(7)
    args = {"a": rng.standard_normal((19, 50)).astype(np.float32),
            "w": rng.integers(0, 19, 19).astype(np.int64)}
    got = run_cpu(module, "k", args, (19,), options={"lanes": 8})
    np.testing.assert_allclose(got["sums"], run_reference(module, "k", args, (19,))["sums"],
                               rtol=1e-5, atol=1e-5)
