"""A nest whose rows share what they update but whose columns do not runs
as instances over strips of columns (strip_instances.py), each strip's
rows in the order written: the same results bit for bit, at sizes that
are and are not multiples of a strip; nests whose strips would share, or
whose inner loop walks columns, stay one task."""
import numpy as np
import pytest

from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline
from hpvm.passes.strip_instances import WIDEST

from benchmarks import loop_orders

from .test_polybench_pipelines import CPU_FOR_4_CORES

ROWS_INTO_Y = """hpvm 1.0
module m

func @k(in a: f32[M, N], in t: f32[M], inout y: f32[N]) {
  for i in 0 .. M step 1 {
    for j in 0 .. N step 1 {
      y[j] = y[j] + a[i, j] * t[i]
    }
  }
}

graph @main(in a: f32[M, N], in t: f32[M], inout y: f32[N]) {
  node n = @k
  in a -> n.a
  in t -> n.t
  in y -> n.y
  out n.y -> y
}

root @main
"""
"""PolyBench's atax, second half: every row scaled into y."""


def run_both(text: str, m: int, n: int):
    module = parse_module(text)
    changed = run_pipeline(module, "loop-instances{outward=true cores=4}", verify_each=True)
    rng = np.random.default_rng(n)
    data = dict(a=rng.standard_normal((m, n), np.float32),
                t=rng.standard_normal(m, np.float32), y=rng.standard_normal(n, np.float32))
    want = Interpreter(module).run(**{k: np.copy(v) for k, v in data.items()})
    got = Interpreter(changed).run(**{k: np.copy(v) for k, v in data.items()})
    np.testing.assert_array_equal(got["y"], want["y"])
    return changed


@pytest.mark.parametrize("n", [3, WIDEST, 2 * WIDEST + 5, 4 * WIDEST * 3 + 7])
def test_rows_updating_a_vector_run_as_instances_over_strips_of_columns_one_a_core(n):
    changed = run_both(ROWS_INTO_Y, 3, n)
    text = print_module(changed)
    width = f"max({WIDEST}, (N + 63) / 64 * 16)"
    assert f"for j in j_strip * {width} .. min(j_strip * {width} + {width}, N)" in text
    assert f"node n = @k_instances [max((N + {width} - 1) / {width}, 0)]" in text


@pytest.mark.parametrize("change", [
    ("y[j] = y[j] + a[i, j] * t[i]", "y[j] = y[j] + a[i, j] * y[0]"),   # strips read y[0]
    ("y[j] = y[j] + a[i, j] * t[i]", "y[j] = y[j] + a[j, i] * t[i]"),   # a column walk
    ("for j in 0 .. N", "for j in i .. N"),                             # a triangle
])
def test_nests_whose_strips_would_share_or_walk_columns_stay_one_task(change):
    text = ROWS_INTO_Y.replace(*change)
    if "a[j, i]" in text:
        text = text.replace("f32[M, N]", "f32[N, M]", 1).replace(
            "graph @main(in a: f32[M, N]", "graph @main(in a: f32[N, M]")
    module = parse_module(text)
    assert run_pipeline(module, "loop-instances{cores=4}") == module


def test_without_cores_given_no_strips_are_cut():
    module = parse_module(ROWS_INTO_Y)
    assert run_pipeline(module, "loop-instances") == module


@pytest.mark.parametrize("name", sorted(loop_orders.FORMS))
def test_every_loop_order_form_through_the_pipeline_for_four_cores_computes_the_same(
        name, monkeypatch):
    """Column sums kept in outputs and finished after (column_moments),
    scaled columns with their sums: task-split again after
    loop-interchange, strips of 2 columns, bit for bit."""
    import hpvm.passes.strip_instances as strips
    monkeypatch.setattr(strips, "WIDEST", 2)
    module = loop_orders.FORMS[name].build()
    changed = run_pipeline(module, CPU_FOR_4_CORES, verify_each=True)
    for m, n in ((6, 9), (3, 4)):
        data = loop_orders.inputs_for(name, np.random.default_rng(m), m, n)
        want = Interpreter(module).run(**{k: np.copy(v) for k, v in data.items()})
        got = Interpreter(changed).run(**{k: np.copy(v) for k, v in data.items()})
        for port, value in want.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{name}: {port}")
