"""loop-interchange and loop-tile on random nests: wherever their legality
check lets a nest be swapped or run in blocks, the interpreter computes
exactly what it did as written (floats bit for bit), whatever the
nest's stores, reads (transposed, along one loop, fixed) and folds; and
a random fold into a local variable, kept in the output to swap its
nest, gives the same column results; a loop of several walks down
the columns, cut in strips, gives the same results."""
import re
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm.passes import column_strips, run_pipeline
from hpvm.passes.loop_interchange import interchange_problem
from hpvm.passes.loop_nests import with_lets_sunk
from hpvm.passes.loop_tile import tile_problem
from hpvm.passes.loop_unroll import loops_by_id

PROGRAM = """hpvm 1.0
module random_nest

func @k(in a: f32[M, M], inout b: f32[M, M], out folds: f32[3]) {
  let n: i64 = 0
  let top: f32 = f32(-1000.0)
  let total: f32 = f32(0.0)
  for i in 0 .. M step 1 {
    for j in 0 .. M step 1 {
BODY
    }
  }
  folds[0] = f32(n)
  folds[1] = top
  folds[2] = total
}

graph @main(in a: f32[M, M], inout b: f32[M, M], out folds: f32[3]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  out n.b -> b
  out n.folds -> folds
}

root @main
"""
INDICES = ("i, j", "j, i", "i, 0", "0, j", "0, 0", "j, 2", "i, i")
reads = st.builds(lambda array, index, scale: f"{array}[{index}] * f32({scale})",
                  st.sampled_from("ab"), st.sampled_from(INDICES), st.sampled_from((1.5, -2.0)))
values = st.one_of(reads, st.builds(lambda x, y: f"{x} + {y}", reads, reads),
                   st.just("f32(i) - f32(j)"))
statements = st.one_of(
    st.builds(lambda index, value: f"b[{index}] = {value}", st.sampled_from(INDICES), values),
    st.just("n = n + 1"),
    st.builds(lambda value: f"top = max(top, {value})", values),
    st.builds(lambda value: f"total = total + {value}", values),
)
INPUTS = {"a": np.random.default_rng(2).standard_normal((5, 5)).astype(np.float32),
          "b": np.random.default_rng(3).standard_normal((5, 5)).astype(np.float32)}


def results(module):
    return run_module(module, {k: v.copy() for k, v in INPUTS.items()})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statements, min_size=1, max_size=4))
def test_a_nest_the_checks_admit_computes_the_same(body):
    module = parse_module(PROGRAM.replace("BODY", "\n".join("      " + s for s in body)))
    function = module.functions["k"]
    nest = loops_by_id(function)["k.i"]
    want = results(module)
    for problem, pipeline in ((interchange_problem, "loop-interchange{loops=k.i}"),
                              (tile_problem, "loop-tile{loops=k.i size=2}")):
        if problem(nest, function, module) is None:
            got = results(run_pipeline(module, pipeline, verify_each=True))
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{pipeline}: {body}")


FOLD = """hpvm 1.0
module random_fold

func @k(in a: f32[M, M], out s: f32[M]) {
  for j in 0 .. M step 1 {
    let total: f32 = INIT
    for i in 0 .. M step 1 {
UPDATES
    }
    s[j] = FINISH
  }
}

graph @main(in a: f32[M, M], out s: f32[M]) {
  node n = @k [1]
  in a -> n.a
  out n.s -> s
}

root @main
"""
folds = st.one_of(st.builds(lambda value: f"total = total + {value}", reads),
                  st.builds(lambda value: f"total = total * f32(0.5) - {value}", reads),
                  st.builds(lambda value: f"total = max(total, {value})", reads),
                  st.builds(lambda value: f"if {value} > total {{\n        total = f32(1.0)\n"
                                          "      }", reads))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(folds, min_size=1, max_size=3), st.sampled_from(("f32(0.0)", "a[j, 0]")),
       st.sampled_from(("total", "total * f32(2.0) + a[0, j]")))
def test_a_fold_kept_in_the_output_computes_the_same(updates, init, finish):
    """reads of ``b`` fall away here: the nest may read only ``a``."""
    updates = [u.replace("b[", "a[") for u in updates]
    text = FOLD.replace("UPDATES", "\n".join("      " + u for u in updates))
    module = parse_module(text.replace("INIT", init).replace("FINISH", finish))
    inputs = {"a": INPUTS["a"]}
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert swapped != module
    np.testing.assert_array_equal(run_module(swapped, inputs)["s"],
                                  run_module(module, inputs)["s"], err_msg=str(updates))


TWO_FOLDS = FOLD.replace("out s: f32[M])", "out s: f32[M], out t: f32[M])").replace(
    "    let total: f32 = INIT\n",
    "    let total: f32 = INIT\n    let other: f32 = f32(1.0)\n").replace(
    "    s[j] = FINISH\n", "    s[j] = FINISH\n    t[j] = SECOND\n").replace(
    "  out n.s -> s\n", "  out n.s -> s\n  out n.t -> t\n")
two_folds = st.one_of(folds, st.builds(lambda value: f"other = other * f32(0.5) + {value}", reads),
                      st.just("other = other - total"), st.just("total = max(total, other)"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(two_folds, min_size=1, max_size=4), st.sampled_from(("total", "total + other")),
       st.sampled_from(("other", "other - total * f32(2.0)", "total")))
def test_two_folds_kept_in_two_outputs_compute_the_same(updates, finish, second):
    """Each fold lives in an output; the finishing stores read both."""
    updates = [u.replace("b[", "a[") for u in updates]
    text = TWO_FOLDS.replace("UPDATES", "\n".join("      " + u for u in updates))
    module = parse_module(text.replace("INIT", "f32(0.0)").replace("FINISH", finish)
                          .replace("SECOND", second))
    inputs = {"a": INPUTS["a"]}
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert swapped != module
    want = run_module(module, inputs)
    for name in ("s", "t"):
        np.testing.assert_array_equal(run_module(swapped, inputs)[name], want[name],
                                      err_msg=str(updates))


LETS = PROGRAM.replace("    for j in 0 .. M step 1 {\n",
                       "LETS    for j in 0 .. M step 1 {\n").replace("BODY\n    }\n",
                                                               "BODY\n    }\nAFTER")
lets = st.builds(lambda x, y: [let for let in (x, y) if let],
                 st.sampled_from(("let x: f32 = a[i, 0] * f32(2.0)", "let x: f32 = b[i, 1]",
                                  "let x: f32 = f32(i)", "")),
                 st.sampled_from(("let y: f32 = f32(0.5)", "let y: f32 = x - a[0, i]", "")))
using = st.one_of(statements, st.builds(lambda index, name: f"b[{index}] = a[{index}] * {name}",
                                        st.sampled_from(INDICES), st.sampled_from("xy")),
                  st.sampled_from(("x = x + f32(1.0)", "total = total + x")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lets, st.lists(using, min_size=1, max_size=3),
       st.sampled_from(("", "    total = total + x\n", "    b[i, 0] = f32(1.0)\n")))
def test_values_computed_in_the_inner_loop_instead_compute_the_same(declared, body, after):
    """Lets before the inner loop (``x``, ``y``) are computed in it where
    the check allows, then the nest is swapped if legal."""
    names = {let.split()[1].rstrip(":") for let in declared}
    if not declared or any(re.search(rf"\b{name}\b", statement) and name not in names
                           for statement in (*body, after, *declared) for name in "xy"):
        return   # a statement reads a let not declared here
    text = LETS.replace("LETS", "".join(f"    {let}\n" for let in declared))
    module = parse_module(text.replace("BODY", "\n".join("      " + s for s in body))
                          .replace("AFTER", after))
    function = module.functions["k"]
    nest = loops_by_id(function)["k.i"]
    candidate = with_lets_sunk(nest) or nest
    if interchange_problem(candidate, function, module) is None:
        swapped = run_pipeline(module, "loop-interchange{loops=k.i}", verify_each=True)
        want = results(module)
        for name, value in results(swapped).items():
            np.testing.assert_array_equal(value, want[name], err_msg=f"{declared} {body} {after}")


VALUES = FOLD.replace("out s: f32[M])", "out s: f32[M], out c: f32[M, M])").replace(
    "    let total: f32 = INIT\n",
    "    let w: f32 = a[1, j] * f32(2.0)\n    let total: f32 = INIT\n").replace(
    "  out n.s -> s\n", "  out n.s -> s\n  out n.c -> c\n")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(folds, st.just("total = total + w"),
                          st.sampled_from(("c[i, j] = a[i, j] * w", "c[j, i] = total"))),
                min_size=1, max_size=4),
       st.sampled_from(("f32(0.0)", "w")),
       st.sampled_from(("total", "total - w", "c[0, j]", "total + c[1, j]")))
def test_values_and_other_stores_beside_a_fold_compute_the_same(updates, init, finish):
    """A value computed before the inner loop (``w``), read by the
    updates, the start or the finish, and stores to another output
    (``c``): wherever the nest is swapped, every output is the same."""
    updates = [u.replace("b[", "a[") for u in updates]
    text = VALUES.replace("UPDATES", "\n".join("      " + u for u in updates))
    module = parse_module(text.replace("INIT", init).replace("FINISH", finish))
    inputs = {"a": INPUTS["a"]}
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    want = run_module(module, inputs)
    for name, value in run_module(swapped, inputs).items():
        np.testing.assert_array_equal(value, want[name], err_msg=f"{updates} {init} {finish}")


PASSES = """hpvm 1.0
module random_passes

func @k(in a: f32[M, M], inout b: f32[M, M], out s: f32[M]) {
  for j in 0 .. M step 1 {
    let total: f32 = f32(0.0)
    let high: f32 = a[0, j]
PASSES
  }
}

graph @main(in a: f32[M, M], inout b: f32[M, M], out s: f32[M]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  out n.b -> b
  out n.s -> s
}

root @main
"""
column_reads = st.builds(lambda array, index: f"{array}[{index}]", st.sampled_from("ab"),
                         st.sampled_from(("i, j", "j, i", "i, 0", "0, j", "j, 2")))
walks = st.one_of(
    st.builds(lambda value: f"total = total + {value}", column_reads),
    st.builds(lambda value: f"high = max(high, {value})", column_reads),
    st.builds(lambda value: f"b[i, j] = {value} / (total + f32(10.0))", column_reads),
    st.builds(lambda index, value: f"b[{index}] = {value} - high",
              st.sampled_from(("i, j", "i, j", "j, i", "0, j", "i, 0")), column_reads))
passes = st.one_of(
    st.builds(lambda walk: f"for i in 0 .. M step 1 {{\n      {walk}\n    }}", walks),
    st.sampled_from(("total = total * f32(0.5) + high", "s[j] = total - high", "s[0] = total",
                     "let scale: f32 = total + high")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(passes, min_size=2, max_size=5))
def test_a_column_loop_cut_in_strips_computes_the_same(body):
    """Walks down the columns and statements between them, reading and
    writing the column, another column or a fixed one: wherever
    loop-interchange cuts the loop in strips (of 2 of the 5 columns
    here) and swaps the walks, every output is the same bit for bit."""
    if sum("let scale" in statement for statement in body) > 1:
        return
    module = parse_module(PASSES.replace("PASSES", "\n".join("    " + s for s in body)))
    inputs = {k: v.copy() for k, v in INPUTS.items()}
    with mock.patch.object(column_strips, "MAX_STRIP", 2):
        changed = run_pipeline(module, "loop-interchange", verify_each=True)
    want = run_module(module, inputs)
    for name, value in run_module(changed, {k: v.copy() for k, v in INPUTS.items()}).items():
        np.testing.assert_array_equal(value, want[name], err_msg=str(body))
