"""loop-interchange and loop-tile on random nests: wherever their legality
check lets a nest be swapped or run in blocks, the interpreter computes
exactly what it did as written (floats bit for bit), whatever the
nest's stores, reads (transposed, along one loop, fixed) and folds; and
a random fold into a local variable, kept in the output to swap its
nest, gives the same column results."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm.passes import run_pipeline
from hpvm.passes.loop_interchange import interchange_problem
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
