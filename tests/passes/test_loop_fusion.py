"""loop-fusion: adjacent loops with the same bounds run in one loop when
each iteration of the second uses only what the same iteration of the
first produced; otherwise they stay apart, and a function named in
``functions`` with nothing fusible is refused with the reason."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline

PROGRAM = """hpvm 1.0
module m

func @k(in a: f32[4, N], out b: f32[4, N]) {
  let i: i64 = instance_id(0)
  array t: f32[4]
  let total: f32 = f32(0.0)
  for c in 0 .. 4 step 1 [ivdep] {
    let v: f32 = a[c, i] * f32(2.0)
    t[c] = v
  }
  for d in 0 .. 4 step 1 [ivdep] {
    let v: f32 = t[d] + f32(1.0)
    SECOND
  }
}

graph @main(in a: f32[4, N], out b: f32[4, N]) {
  node n = @k [N]
  in a -> n.a
  out n.b -> b
}

root @main
"""


def program(second: str = "b[d, i] = v"):
    return parse_module(PROGRAM.replace("array t", "private t").replace("SECOND", second))


def test_adjacent_loops_over_the_same_range_become_one():
    module = program()
    fused = run_pipeline(module, "loop-fusion", verify_each=True)
    text = print_module(fused)
    assert text[text.index("  for"):text.index("\ngraph")] == """  for c in 0 .. 4 step 1 [ivdep] {
    let v: f32 = a[c, i] * f32(2.0)
    t[c] = v
    let v_1: f32 = t[c] + f32(1.0)
    b[c, i] = v_1
  }
}
"""
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(run_module(fused, {"a": a})["b"], run_module(module, {"a": a})["b"])


@pytest.mark.parametrize("second, reason", [
    ("b[d, i] = t[3 - d]", "access 't' at elements of other iterations"),
    ("b[d, i] = t[3]", "access 't' at elements of other iterations"),
])
def test_loops_that_would_see_other_iterations_stay_apart(second, reason):
    module = program(second)
    assert print_module(run_pipeline(module, "loop-fusion")).count("  for ") == 2
    with pytest.raises(PassError, match=f"loops over 'c' and 'd' {reason}"):
        run_pipeline(module, "loop-fusion{functions=k}")


def test_a_loop_reading_what_earlier_iterations_of_the_first_wrote_fuses():
    """t[0] is made by the first iteration, before any fused iteration
    reads it (affine_dependences.py)."""
    module = program("b[d, i] = t[0] + v")
    fused = run_pipeline(module, "loop-fusion{functions=k}", verify_each=True)
    assert print_module(fused).count("  for ") == 1
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(run_module(fused, {"a": a})["b"],
                                  run_module(module, {"a": a})["b"])


def test_a_scalar_assigned_in_one_loop_and_used_in_the_other_prevents_fusion():
    text = PROGRAM.replace("array t", "private t").replace(
        "    t[c] = v\n", "    t[c] = v\n    total = total + v\n").replace("SECOND", "b[d, i] = v + total")
    with pytest.raises(PassError, match="share the variable\\(s\\) total"):
        run_pipeline(parse_module(text), "loop-fusion{functions=k}")


def test_an_unknown_function_names_the_functions():
    with pytest.raises(PassError, match="no function '@nope'"):
        run_pipeline(program(), "loop-fusion{functions=nope}")


SEPARATED = """hpvm 1.1
module t

func @k(in a: f32[N], out y: f32[2]) {
  let s: f32 = f32(0.0)
  for i in 0 .. N step 1 {
    s = s + a[i]
  }
  let mean: f32 = s / f32(2.0)
  let m: f32 = f32(0.0)
  let copy: f32 = m
  for j in 0 .. N step 1 {
    m = max(m, a[j])
  }
  y[0] = mean
  y[1] = m + copy
}

graph @main(in a: f32[N], out y: f32[2]) {
  node k = @k
  in a -> k.a
  out k.y -> y
}

root @main
"""


def test_lets_between_loops_move_out_of_the_way():
    module = parse_module(SEPARATED)
    fused = run_pipeline(module, "loop-fusion", verify_each=True)
    body = print_module(fused)
    assert body[body.index("func"):body.index("  y[0]")] == """func @k(in a: f32[N], out y: f32[2]) {
  let s: f32 = f32(0.0)
  let m: f32 = f32(0.0)
  let copy: f32 = m
  for i in 0 .. N step 1 {
    s = s + a[i]
    m = max(m, a[i])
  }
  let mean: f32 = s / f32(2.0)
"""
    inputs = {"a": np.arange(5, dtype=np.float32)}
    np.testing.assert_array_equal(run_module(fused, inputs)["y"], run_module(module, inputs)["y"])


def test_a_let_that_reads_what_the_second_loop_changes_stays_between():
    text = SEPARATED.replace("  let m: f32 = f32(0.0)\n  let copy: f32 = m\n", "").replace(
        "let mean: f32 = s / f32(2.0)", "let mean: f32 = s / m").replace(
        "  let s: f32 = f32(0.0)\n", "  let s: f32 = f32(0.0)\n  let m: f32 = f32(1.0)\n").replace(
        "m + copy", "m")
    module = parse_module(text)
    assert print_module(run_pipeline(module, "loop-fusion")) == print_module(module)
