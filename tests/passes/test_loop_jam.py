"""loop-jam: a loop whose inner loop waits on a chain runs several of its
iterations' chains side by side, each in its own order (bit for bit in
the golden model, the rows left over by the factor included); loops
whose iterations could share what they write, whose inner bounds change,
or whose folds back ends reorder anyway are left, and refused with the
reason when named."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

from benchmarks.loop_orders import FORMS, inputs_for, reference

PROGRAM = """hpvm 1.0
module rows

func @k(in a: f32[M, N], in x: f32[N], inout y: f32[M], out s: f32[M]) {
  for i in 0 .. M step 1 {
BODY
  }
}

graph @main(in a: f32[M, N], in x: f32[N], inout y: f32[M], out s: f32[M]) {
  node n = @k [1]
  in a -> n.a
  in x -> n.x
  in y -> n.y
  out n.y -> y
  out n.s -> s
}

root @main
"""
MATVEC = "    for j in 0 .. N step 1 {\n      y[i] = y[i] + a[i, j] * x[j]\n    }"
SUMS = ("    let total: f32 = a[i, 0]\n    let scale: f32 = x[0] * f32(i)\n"
        "    for j in 1 .. N step 1 {\n      let v: f32 = a[i, j] * scale\n"
        "      total = total * f32(0.5) + v\n    }\n    s[i] = total - scale")


def nest(body):
    return parse_module(PROGRAM.replace("BODY", body))


def inputs(rows, rng=None):
    rng = rng or np.random.default_rng(rows)
    return {"a": rng.standard_normal((rows, 9)).astype(np.float32),
            "x": rng.standard_normal(9).astype(np.float32),
            "y": rng.standard_normal(rows).astype(np.float32)}


def same_results(module, changed, rows):
    want = run_module(module, inputs(rows))
    for name, value in run_module(changed, inputs(rows)).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)


@pytest.mark.parametrize("body", [MATVEC, SUMS])
@pytest.mark.parametrize("rows", [1, 8, 21])
def test_the_rows_chains_run_side_by_side_in_their_own_order(body, rows):
    module = nest(body)
    jammed = run_pipeline(module, "loop-jam", verify_each=True)
    text = print_module(jammed)
    assert "for i_group in 0 .. 0 + i_count / 8 * 8 step 8 {" in text
    assert "for i in 0 + i_count / 8 * 8 .. M step 1 [unroll = 1] {" in text
    same_results(module, jammed, rows)
    assert run_pipeline(jammed, "loop-jam") == jammed      # the rows left over stay


def test_the_cpu_runs_a_matrix_vector_product_written_by_columns():
    """benchmarks/loop_orders.py's column_matvec: swapped, then jammed."""
    program = FORMS["column_matvec"]
    module = run_pipeline(program.build(), "loop-interchange,loop-jam", verify_each=True)
    assert "step 8 {" in print_module(module)
    data = inputs_for("column_matvec", np.random.default_rng(3), 29, 40)
    np.testing.assert_array_equal(run_module(module, data)["out"],
                                  run_module(program.build(), data)["out"])
    if "cpu" in usable_targets():
        got = hpvm.compile(program, ["cpu"])(**data)
        assert_outputs_close(got, {"out": reference("column_matvec", data)}, 1e-5, 1e-5, "cpu")


@pytest.mark.parametrize("body, reason", [
    ("    for j in 0 .. N step 1 {\n      y[0] = y[0] + a[i, j]\n    }",
     "iterations that may share what its body writes"),
    ("    for j in i .. N step 1 {\n      y[i] = y[i] + a[i, j]\n    }",
     "whose bounds change from one iteration to the next"),
    ("    for j in 0 .. N step 1 {\n      for m in 0 .. 2 step 1 {\n        y[i] = y[i] + a[i, j]"
     "\n      }\n    }", "other than statements around one innermost loop"),
])
def test_loops_whose_iterations_could_meet_are_left_and_refused(body, reason):
    module = nest(body)
    assert run_pipeline(module, "loop-jam") == module
    with pytest.raises(PassError, match=reason):
        run_pipeline(module, "loop-jam{loops=k.i}")


@pytest.mark.parametrize("body", [
    "    for j in 0 .. N step 1 {\n      s[i] = a[i, j] * x[j]\n    }",       # no chain
    "    for j in 0 .. N step 1 [reduce y_sum: add] {\n      y_sum = y_sum + a[i, j]\n    }",
])
def test_inner_loops_without_a_chain_to_wait_on_are_left(body):
    body = body if "y_sum" not in body else (
        "    let y_sum: f32 = f32(0.0)\n" + body + "\n    s[i] = y_sum")
    module = nest(body)
    assert run_pipeline(module, "loop-jam") == module
    named = run_pipeline(module, "loop-jam{loops=k.i}", verify_each=True)   # legal all the same
    same_results(module, named, 11)


updates = st.sampled_from((
    "total = total + a[i, j] * x[j]", "total = max(total, a[i, j])",
    "y[i] = y[i] * f32(0.5) + a[i, j]", "total = total - y[i] * x[j]",
    "let v: f32 = a[i, j] + total\n      total = v * f32(0.25)"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(updates, min_size=1, max_size=3, unique=True), st.integers(1, 19),
       st.integers(2, 9))
def test_any_chain_jammed_by_any_factor_computes_the_same(chain, rows, factor):
    body = ("    let total: f32 = x[1] * f32(i)\n    for j in 0 .. N step 1 {\n"
            + "\n".join("      " + u for u in chain) + "\n    }\n    s[i] = total")
    module = nest(body)
    same_results(module, run_pipeline(module, f"loop-jam{{loops=k.i factor={factor}}}",
                                      verify_each=True), rows)
