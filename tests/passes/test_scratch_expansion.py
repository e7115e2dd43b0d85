"""scratch-expansion: a buffer every iteration of a task's loop writes
whole before it reads it gets a row per iteration, the last row copied
back after the loop (PolyBench's doitgen); the loop then runs as
instances, bit for bit. A buffer read before it is written, written in
part, or written in loops that depend on the iteration stays shared."""
import numpy as np
import pytest

from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline

from benchmarks import polybench

from .test_polybench_pipelines import computes_the_same

ROWS = """hpvm 1.0
module m

func @k(inout a: f32[R, P], in w: f32[P, P], out sums: f32[P]) {
  for r in 0 .. R step 1 {
    for p in 0 .. P step 1 {
      sums[p] = f32(0.0)
      for s in 0 .. P step 1 {
        sums[p] = sums[p] + a[r, s] * w[s, p]
      }
    }
    for p2 in 0 .. P step 1 {
      a[r, p2] = sums[p2]
    }
  }
}

graph @main(inout a: f32[R, P], in w: f32[P, P], out sums: f32[P]) {
  node n = @k
  in a -> n.a
  in w -> n.w
  out n.a -> a
  out n.sums -> sums
}

root @main
"""
"""doitgen with one row index: each row of a times w, through sums."""


def both(module, changed, data):
    want = Interpreter(module).run(**{k: np.copy(v) for k, v in data.items()})
    got = Interpreter(changed).run(**{k: np.copy(v) for k, v in data.items()})
    for port, value in want.items():
        np.testing.assert_array_equal(got[port], value, err_msg=port)


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_a_scratch_row_gets_a_row_per_iteration_and_the_loop_runs_as_instances(rows):
    module = parse_module(ROWS)
    changed = run_pipeline(module, "scratch-expansion,task-split,loop-instances,dce",
                           verify_each=True)
    text = print_module(changed)
    assert "sums_rows[r, p] = sums_rows[r, p] + a[r, s] * w[s, p]" in text
    assert "node n_0 = @k_expanded_0_instances [max(R, 0)]" in text
    assert "if 0 < R {\n    for sums_0 in 0 .. P step 1 {\n" \
           "      sums[sums_0] = sums_rows[R - 1, sums_0]" in text
    rng = np.random.default_rng(rows)
    both(module, changed, {"a": rng.standard_normal((rows, 6), np.float32),
                           "w": rng.standard_normal((6, 6), np.float32)})


@pytest.mark.parametrize("change", [
    ("sums[p] = f32(0.0)\n", "sums[p] = sums[P - 1 - p]\n"),     # reads what it has not written
    ("for p in 0 .. P step 1 {", "for p in 1 .. P step 1 {"),      # writes all but sums[0]
    ("for p in 0 .. P step 1 {", "for p in 0 .. r step 1 {"),      # as much as the row says
])
def test_a_buffer_not_written_whole_before_it_is_read_stays_shared(change):
    module = parse_module(ROWS.replace(*change))
    assert run_pipeline(module, "scratch-expansion") == module


def test_doitgen_runs_its_rows_as_instances_bit_for_bit():
    module = polybench.FORMS["doitgen"].build()
    changed = run_pipeline(module, "scratch-expansion,task-split,loop-instances,dce",
                           verify_each=True)
    assert "node doitgen_0 = @doitgen_expanded_0_instances [max(R, 0)]" in print_module(changed)
    computes_the_same("doitgen", module, changed, ((8, 8), (16, 16)))
