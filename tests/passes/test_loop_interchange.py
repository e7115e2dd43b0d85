"""loop-interchange: a perfect nest whose outer loop walks memory
contiguously and whose inner loop does not is swapped, and computes
exactly what it did (the interpreter runs both, and every usable target
both, which may contract a multiply-add where the interpreter does not);
nests whose order could show (a float sum across them, a write another
iteration reads, bounds that move) stay as written, and a named one is
refused with the reason."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.loop_interchange import interchangeable_loops
from hpvm.runtime.compiler import as_module
from hpvm.testing import usable_targets

from benchmarks.loop_orders import FORMS, inputs_for, reference

PROGRAM = """hpvm 1.0
module m

func @k(in a: f32[M, N], in scale: f32, out b: f32[M, N], out count: i64[1]) {
  PRELUDE
  for OUTER step 1 {
    for INNER step 1 {
      BODY
    }
  }
  AFTER
}

graph @main(in a: f32[M, N], in scale: f32, out b: f32[M, N], out count: i64[1]) {
  node n = @k [1]
  in a -> n.a
  in scale -> n.scale
  out n.b -> b
  out n.count -> count
}

root @main
"""
COLUMN_WALK = "b[i, j] = a[i, j] * scale"
ZEROED = ("for y in 0 .. M step 1 {\n    for z in 0 .. N step 1 {\n      b[y, z] = f32(0.0)\n"
          "    }\n  }")
INPUTS = {"a": np.arange(35, dtype=np.float32).reshape(5, 7) - 9, "scale": 1.5}


def program(body=COLUMN_WALK, prelude="", after="count[0] = 0", outer="j in 0 .. N",
            inner="i in 0 .. M"):
    text = PROGRAM.replace("BODY", body).replace("PRELUDE", prelude).replace("AFTER", after)
    return parse_module(text.replace("OUTER", outer).replace("INNER", inner))


def loop_order(module):
    return [line.split()[1] for line in print_module(module).splitlines()
            if line.strip().startswith("for ")]


def same_results(module, swapped):
    want = run_module(module, INPUTS)
    got = run_module(swapped, INPUTS)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    for target in usable_targets(("cpu", "gpu_opencl")):   # bit for bit as the target runs it
        results = hpvm.compile(swapped, [target])(**INPUTS)
        as_written = hpvm.compile(module, [target])(**INPUTS)
        for name in want:
            np.testing.assert_array_equal(results[name], as_written[name], err_msg=target)
            np.testing.assert_allclose(results[name], want[name], rtol=1e-6, err_msg=target)


def test_a_column_walk_becomes_a_row_walk():
    module = program()
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(module) == ["j", "i"] and loop_order(swapped) == ["i", "j"]
    same_results(module, swapped)
    assert interchangeable_loops(module) == ["k.j"]


def test_a_row_walk_is_left_alone_unless_named():
    module = program(outer="i in 0 .. M", inner="j in 0 .. N")
    assert loop_order(run_pipeline(module, "loop-interchange")) == ["i", "j"]
    swapped = run_pipeline(module, "loop-interchange{loops=k.i}", verify_each=True)
    assert loop_order(swapped) == ["j", "i"]
    same_results(module, swapped)


@pytest.mark.parametrize("body, prelude, after", [
    # integer counts and float maxima fold exactly in any order
    ("b[i, j] = a[i, j]\n      n = n + 1", "let n: i64 = 0", "count[0] = n"),
    ("b[i, j] = a[i, j]\n      top = max(top, a[i, j])", "let top: f32 = f32(-1000.0)",
     "count[0] = i64(top)"),
    # the last write of each row's element is the same in both orders
    ("b[i, 0] = a[i, j] + scale", ZEROED,
     "count[0] = 0"),
    # private values of each iteration, a branch, a read of another element
    ("let v: f32 = a[i, j] * scale\n      if v > f32(0.0) {\n        b[i, j] = v\n      } else "
     "{\n        b[i, j] = a[M - 1 - i, j]\n      }", "", "count[0] = 0"),
])
def test_folds_in_any_order_and_private_values_swap(body, prelude, after):
    module = program(body, prelude, after)
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert loop_order(swapped)[-2:] == ["i", "j"]
    same_results(module, swapped)


def test_an_element_shared_by_the_iterations_of_one_column_keeps_their_order():
    module = program("b[0, j] = b[0, j] + a[i, j] * scale", ZEROED)
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert loop_order(swapped) == ["y", "z", "i", "j"]
    same_results(module, swapped)   # the float sums bit for bit: each column in row order
    shared = program("b[0, 0] = b[0, 0] + a[i, j]", ZEROED)
    with pytest.raises(PassError, match="writes 'b' at elements another iteration may access"):
        run_pipeline(shared, "loop-interchange{loops=k.j}")


def test_stores_of_one_element_by_the_iterations_of_one_row_keep_their_order():
    """``b[i, 0]``, stored by every column of row i and by its first: the
    iterations storing it differ only along j, which both orders run in
    the same order (affine_dependences.swap_keeps_order)."""
    module = program("b[i, j] = a[i, j]\n      b[i, 0] = a[i, j]")
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    assert loop_order(swapped)[-2:] == ["i", "j"]
    same_results(module, swapped)


@pytest.mark.parametrize("changes, reason", [
    ({"body": "b[i, j] = a[i, j]\n      total = total + a[i, j]", "prelude":
      "let total: f32 = f32(0.0)", "after": "count[0] = i64(total)"},
     "assigns 'total', declared outside the nest, other than by a fold"),
    # a float sum is not taken for an integer fold by another block's i64 'total'
    ({"body": "b[i, j] = a[i, j]\n      total = total + a[i, j]", "prelude":
      "let total: f32 = f32(0.0)", "after": "for z in 0 .. 1 step 1 {\n    let total: i64 = 0\n"
      "    count[0] = total\n  }"},
     "assigns 'total', declared outside the nest, other than by a fold"),
    ({"body": "b[i, 0] = b[j, 0] + a[i, j]"},
     "writes 'b' at elements another iteration may access"),
    ({"inner": "i in 0 .. j * 2"}, "has an inner loop 'i' whose bounds read 'j' other than"),
    ({"body": "b[i, j] = a[i, j]\n      count[0] = 1"}, "writes 'count'"),
])
def test_nests_whose_order_could_show_are_refused_with_the_reason(changes, reason):
    module = program(**changes)
    assert run_pipeline(module, "loop-interchange") == module
    with pytest.raises(PassError, match=reason):
        run_pipeline(module, "loop-interchange{loops=k.j}")
    assert interchangeable_loops(module) == []


def test_an_imperfect_nest_is_refused():
    text = print_module(program()).replace(
        "    for i in", "    let t: i64 = j\n    count[0] = t\n    for i in")
    module = parse_module(text)
    with pytest.raises(PassError, match="is not a perfect nest"):
        run_pipeline(module, "loop-interchange{loops=k.j}")


def hoisted(lets, body="b[i, j] = a[i, j] * s", after=""):
    """The column walk with ``lets`` computed before its inner loop and
    ``after`` it."""
    text = PROGRAM.replace("    for INNER", "".join(f"    {let}\n" for let in lets)
                           + "    for INNER").replace("      BODY\n    }\n",
                                                     f"      BODY\n    }}\n{after}")
    text = text.replace("BODY", body).replace("PRELUDE", "").replace("AFTER", "count[0] = 0")
    return parse_module(text.replace("OUTER", "j in 0 .. N").replace("INNER", "i in 0 .. M"))


@pytest.mark.parametrize("lets, body", [
    (["let s: f32 = scale * f32(j)"], "b[i, j] = a[i, j] * s"),          # a programmer's hoisting
    (["let w: f32 = a[0, j]", "let s: f32 = w * scale"], "b[i, j] = a[i, j] * s"),   # a chain
    (["let s: f32 = a[0, j]", "let unused: f32 = s"], "b[i, j] = a[i, j] + s"),
])
def test_values_computed_before_the_inner_loop_are_computed_in_it(lets, body):
    module = hoisted(lets, body)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["i", "j"]
    same_results(module, swapped)


def test_a_value_read_after_the_walk_where_columns_share_a_store_keeps_the_nest():
    module = hoisted(["let s: i64 = j"], "b[i, j] = a[i, j] * scale", "    count[0] = s\n")
    assert loop_order(run_pipeline(module, "loop-interchange")) == ["j", "i"]
    with pytest.raises(PassError, match="is not a perfect nest"):
        run_pipeline(module, "loop-interchange{loops=k.j}")


@pytest.mark.parametrize("lets, body", [
    (["let s: f32 = b[0, j]"], "b[i, j] = a[i, j] * s"),         # reads what the nest writes
    (["let s: f32 = f32(j)"], "b[i, j] = a[i, j] * s\n      s = s + f32(1.0)"),   # assigned
])
def test_values_the_walk_changes_or_reads_are_kept_for_a_strip_of_columns(lets, body):
    """Values that cannot be computed again in the inner loop live in an
    array of a strip of columns (column_strips.py); the walk swaps."""
    module = hoisted(lets, body)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j_strip", "j", "i", "j"]
    assert loop_order(run_pipeline(module, "loop-interchange{loops=k.j}")) == loop_order(swapped)
    same_results(module, swapped)


def test_an_unknown_loop_names_the_loops():
    with pytest.raises(PassError, match="no loop 'k.x'.*the loops are: k.i, k.j"):
        run_pipeline(program(), "loop-interchange{loops=k.x}")


def test_the_tuner_offers_each_nest_and_leaves_it_where_loops_are_fused():
    from hpvm.tune import space
    module = program()
    design = space(module, ["cpu"])
    assert design.parameter("interchange k.j").values == (False, True)
    realised = design.realise({"interchange k.j": True})
    assert realised.pipeline.startswith("loop-interchange{loops=k.j}")
    assert loop_order(realised.module) == ["i", "j"]
    twice = program(after="for j in 0 .. N step 1 {\n    for i in 0 .. M step 1 {\n      "
                          "b[i, j] = b[i, j] + a[i, j]\n    }\n  }\n  count[0] = 0")
    design = space(twice, ["cpu"])
    realised = design.realise({"interchange k.j": True, "fuse loops @k": True})
    assert "interchange k.j is not applied: loop-fusion rewrites the loops of '@k'" in \
        realised.notes
    same_results(twice, realised.module)


def test_the_contiguous_loop_sinks_to_the_innermost_place():
    text = """hpvm 1.0
module deep

func @k(in x: f32[H, W, C], out y: f32[H, W, C]) {
  for c in 0 .. C step 1 {
    for j in 0 .. W step 1 {
      for i in 0 .. H step 1 {
        y[i, j, c] = x[i, j, c] + f32(1.0)
      }
    }
  }
}

graph @main(in x: f32[H, W, C], out y: f32[H, W, C]) {
  node n = @k [1]
  in x -> n.x
  out n.y -> y
}

root @main
"""
    module = parse_module(text)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j", "i", "c"]
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(run_module(swapped, {"x": x})["y"], x + 1)


@pytest.mark.parametrize("name", sorted(FORMS))
def test_nests_written_column_by_column_are_swapped_by_the_default_pipelines(name):
    """benchmarks/loop_orders.py: each written form is swapped (what it
    computes decides, not its name) and gives numpy's result."""
    program = FORMS[name]
    module = as_module(program)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert swapped.functions != module.functions
    inputs = inputs_for(name, np.random.default_rng(3), 32, 24)
    for target in usable_targets(("cpu", "gpu_opencl")):
        got = hpvm.compile(program, [target], {"pipeline": "default"})(**inputs)["out"]
        np.testing.assert_allclose(got, reference(name, inputs), rtol=1e-5, atol=1e-5,
                                   err_msg=target)


COLUMNS = """hpvm 1.0
module columns

func @k(in a: f32[M, N], out s: OUT[N]) {
  for j in 0 .. N step 1 {
    let total: f32 = INIT
    for i in 0 .. M step 1 {
      UPDATE
    }
    s[j] = FINISH
  }
}

graph @main(in a: f32[M, N], out s: OUT[N]) {
  node n = @k [1]
  in a -> n.a
  out n.s -> s
}

root @main
"""


def columns(update="total = total + a[i, j]", finish="total", init="f32(0.0)", out="f32"):
    return parse_module(COLUMNS.replace("UPDATE", update).replace("FINISH", finish)
                        .replace("INIT", init).replace("OUT", out))


@pytest.mark.parametrize("update, finish, init", [
    ("total = total + a[i, j]", "total", "f32(0.0)"),                 # column sums
    ("total = total + a[i, j]", "total / f32(M)", "f32(0.0)"),        # column means
    ("let v: f32 = a[i, j] * a[i, j]\n      if v > total {\n        total = v\n      }",
     "total", "a[0, j]"),                                              # a branch, a local
])
def test_a_fold_kept_in_the_output_makes_the_nest_perfect(update, finish, init):
    module = columns(update, finish, init)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped)[:3] == ["j", "i", "j"]
    a = np.random.default_rng(4).standard_normal((7, 5)).astype(np.float32)
    want = run_module(module, {"a": a})["s"]
    np.testing.assert_array_equal(run_module(swapped, {"a": a})["s"], want)
    for target in usable_targets(("cpu", "gpu_opencl")):
        got = hpvm.compile(swapped, [target])(a=a)["s"]
        np.testing.assert_array_equal(got, hpvm.compile(module, [target])(a=a)["s"], err_msg=target)


def test_a_fold_beside_other_stores_is_kept_in_its_output():
    """A column's sum beside a column walk that scales it: the starts and
    the finishes read nothing the walk stores, so both swap together."""
    module = parse_module(COLUMNS.replace("out s: OUT[N])", "out s: OUT[N], out c: f32[M, N])")
                          .replace("  out n.s -> s\n", "  out n.s -> s\n  out n.c -> c\n")
                          .replace("UPDATE", "c[i, j] = a[i, j] * f32(2.0)\n      "
                                             "total = total + a[i, j]")
                          .replace("FINISH", "total").replace("INIT", "f32(0.0)")
                          .replace("OUT", "f32"))
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j", "i", "j"]
    a = np.random.default_rng(5).standard_normal((7, 5)).astype(np.float32)
    want = run_module(module, {"a": a})
    for name, value in run_module(swapped, {"a": a}).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    reading = parse_module(print_module(module).replace("s[j] = total", "s[j] = total + c[0, j]"))
    strips = run_pipeline(reading, "loop-interchange", verify_each=True)   # the finish reads c
    assert loop_order(strips) == ["j_strip", "j", "i", "j", "j"]
    for name, value in run_module(strips, {"a": a}).items():
        np.testing.assert_array_equal(value, run_module(reading, {"a": a})[name], err_msg=name)


def test_a_fold_whose_columns_share_an_element_keeps_the_nest():
    module = columns(update="total = total + a[i, j] + s[0]")   # the nest reads the output
    assert run_pipeline(module, "loop-interchange") == module
    with pytest.raises(PassError, match="is not a perfect nest"):
        run_pipeline(module, "loop-interchange{loops=k.j}")


@pytest.mark.parametrize("changes", [
    {"out": "f64", "finish": "f64(total)"},                  # the output rounds otherwise
    {"init": "s[j]"},                                        # the start reads the output
])
def test_a_fold_that_cannot_live_in_the_output_is_kept_for_a_strip(changes):
    module = columns(**changes)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j_strip", "j", "i", "j", "j"]
    a = np.random.default_rng(9).standard_normal((7, 5)).astype(np.float32)
    np.testing.assert_array_equal(run_module(swapped, {"a": a})["s"],
                                  run_module(module, {"a": a})["s"])


def test_values_beside_a_fold_are_computed_where_they_are_read():
    """``v``, read only in the inner loop, moves into it; ``w``, read by
    the column's final store, is computed again in the finishing loop;
    the fold is kept in the output and the nest swaps."""
    text = COLUMNS.replace("    let total", "    let w: f32 = a[0, j]\n    let v: f32 = a[1, j]\n"
                                            "    let total")
    module = parse_module(text.replace("UPDATE", "total = total + a[i, j] * v")
                          .replace("FINISH", "total * w").replace("INIT", "f32(0.0)")
                          .replace("OUT", "f32"))
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(swapped) == ["j", "i", "j", "j"]
    a = np.random.default_rng(6).standard_normal((7, 5)).astype(np.float32)
    np.testing.assert_array_equal(run_module(swapped, {"a": a})["s"],
                                  run_module(module, {"a": a})["s"])


def test_values_the_inner_loop_declares_again_or_leaves_undefined_are_not_computed_again():
    """A name the inner loop declares again (in a branch) is not moved in
    beside it, nor kept for a strip; a value left undefined is not one to
    compute again: it is kept for a strip, in an array that starts
    zeroed."""
    shadowed = hoisted(["let s: f32 = scale"], "b[i, j] = a[i, j] * s\n      if s > f32(0.0) {\n"
                       "        let s: f32 = a[i, j]\n        b[i, j] = s\n      }")
    assert run_pipeline(shadowed, "loop-interchange", verify_each=True) == shadowed
    text = COLUMNS.replace("    let total", "    let w: f32\n    let total")
    undefined = parse_module(text.replace("UPDATE", "total = total + a[i, j]")
                             .replace("FINISH", "total * w").replace("INIT", "f32(0.0)")
                             .replace("OUT", "f32"))
    strips = run_pipeline(undefined, "loop-interchange", verify_each=True)
    assert "private w_strip: f32[1024]\n" in print_module(strips)
    assert loop_order(strips) == ["j_strip", "j", "i", "j", "j"]
