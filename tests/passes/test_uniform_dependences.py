"""loop-interchange on nests whose iterations read what others wrote, at
constant distances (core/passes/affine_dependences.swap_keeps_order): swapped where
both orders run every such pair in the same order, bit for bit; left as
written, or refused when named, where a distance rises along one loop and
falls along the other."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.loop_interchange import interchange_problem
from hpvm.passes.loop_tile import tile_problem
from hpvm.passes.loop_unroll import loops_by_id

from benchmarks.loop_orders import FORMS, inputs_for, reference

PROGRAM = """hpvm 1.0
module shifted

func @k(in a: f32[M, N], inout b: f32[M, N]) {
  for j in 1 .. N - 1 step 1 {
    for i in 1 .. M - 1 step 1 {
BODY
    }
  }
}

graph @main(in a: f32[M, N], inout b: f32[M, N]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  out n.b -> b
}

root @main
"""
INPUTS = {"a": np.random.default_rng(0).standard_normal((6, 7)).astype(np.float32),
          "b": np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32)}


def nest(*body):
    return parse_module(PROGRAM.replace("BODY", "\n".join("      " + s for s in body)))


def loop_order(module):
    return [line.split()[1] for line in print_module(module).splitlines()
            if line.strip().startswith("for ")]


def results(module):
    return run_module(module, {k: v.copy() for k, v in INPUTS.items()})["b"]


def test_a_running_sum_down_each_column_walks_along_the_rows():
    """benchmarks/loop_orders.py's column_cumsum: the first row stored
    per column, then each row adds the one before (strips, then the swap)."""
    module = FORMS["column_cumsum"].build()
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j_strip", "j", "i", "j"]
    inputs = inputs_for("column_cumsum", np.random.default_rng(2), 40, 30)
    got = run_module(swapped, inputs)["out"]
    np.testing.assert_array_equal(got, run_module(module, inputs)["out"])
    np.testing.assert_array_equal(got, reference("column_cumsum", inputs))


@pytest.mark.parametrize("body", [
    "b[i, j] = b[i - 1, j] + a[i, j]",                 # (0, 1): down the column
    "b[i, j] = b[i, j - 1] * f32(0.5) + b[i - 1, j]",  # (1, 0) and (0, 1): a wavefront
    "b[i, j] = b[i - 1, j - 1] + b[i + 1, j + 1]",     # (1, 1) back and forth
    "b[i + 1, j] = b[i, j] - a[i, j]",                 # the next row's element
])
def test_distances_of_one_sign_along_both_loops_swap(body):
    module = nest(body)
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert loop_order(swapped) == ["i", "j"]
    np.testing.assert_array_equal(results(swapped), results(module))


@pytest.mark.parametrize("body", [
    "b[i, j] = b[i - 1, j + 1] + a[i, j]",     # (1, -1): the next column's earlier row
    "b[i, j] = b[i + 1, j - 1] + a[i, j]",
    "b[i, j] = b[i - 1, 2] + a[i, j]",         # a fixed column
    "b[i, j] = b[j, i] + a[i, j]",             # transposed
])
def test_a_distance_that_falls_along_one_loop_keeps_the_nest(body):
    module = nest(body)
    assert run_pipeline(module, "loop-interchange") == module
    with pytest.raises(PassError, match="shifted by constants that rise or fall along both"):
        run_pipeline(module, "loop-interchange{loops=k.j}")


SHIFTS = ("i - 1", "i", "i + 1")
COLUMNS = ("j - 1", "j", "j + 1")
accesses = st.builds(lambda row, column: f"{row}, {column}", st.sampled_from(SHIFTS),
                     st.sampled_from(COLUMNS))
statements = st.builds(lambda store, read, scale: f"b[{store}] = b[{read}] * f32({scale}) + "
                                                  "a[i, j]",
                       accesses, accesses, st.sampled_from((0.5, -1.5)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statements, min_size=1, max_size=3))
def test_a_nest_of_shifted_accesses_the_check_admits_computes_the_same(body):
    """Swapped, or run in blocks of 2 x 2, wherever the checks admit it."""
    module = nest(*body)
    function = module.functions["k"]
    for problem, pipeline in ((interchange_problem, "loop-interchange{loops=k.j}"),
                              (tile_problem, "loop-tile{loops=k.j size=2}")):
        if problem(loops_by_id(function)["k.j"], function, module) is None:
            changed = run_pipeline(module, pipeline, verify_each=True)
            np.testing.assert_array_equal(results(changed), results(module),
                                          err_msg=f"{pipeline}: {body}")
