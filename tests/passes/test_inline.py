"""inline: helpers are inlined with fresh names, correct returns, and the
evaluation order of the calls they replace."""
import textwrap

import numpy as np

from hpvm.interp import run_module
from hpvm.ir.kernel import Call
from hpvm.ir.text import parse_module, print_stmts
from hpvm.ir.verify import verify
from hpvm.ir.visit import walk
from hpvm.passes import run_pipeline

TEMPLATE = """hpvm 1.0
module t

HELPERS

func @k(inout a: f32[N], in n: i32, out b: f32[N]) {
  BODY
}

graph @main(in a: f32[N], in n: i32, out a2: f32[N], out b: f32[N]) {
  node k = @k [REPLICATION]
  in a -> k.a
  in n -> k.n
  out k.a -> a2
  out k.b -> b
}

root @main
"""


def kernel_module(helpers: str, body: str, replication: str = "N"):
    lines = textwrap.dedent(body).strip().splitlines()
    text = (TEMPLATE.replace("HELPERS", textwrap.dedent(helpers).strip())
            .replace("BODY", "\n  ".join(lines)).replace("REPLICATION", replication))
    return parse_module(text)


def inline(module, options: str = ""):
    result = run_pipeline(module, "inline" + options, verify_each=True)
    verify(result)
    return result


def calls_in(module, function="k"):
    return [n.function for n in walk(module.functions[function].body) if isinstance(n, Call)]


def assert_same_results(module, transformed, n=3):
    inputs = {"a": np.array([3.0, -1.0, 4.0, 0.5, -2.0], np.float32), "n": n}
    before = run_module(module, inputs)
    after = run_module(transformed, inputs)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


SQUARE = """
func @square(in v: f32) -> f32 {
  let r: f32 = v * v
  return r
}
"""


def test_call_is_replaced_by_the_helper_body():
    m = kernel_module(SQUARE, "b[instance_id(0)] = @square(a[instance_id(0)]) + f32(1.0)")
    result = inline(m)
    assert calls_in(result) == []
    assert print_stmts(result.functions["k"].body) == textwrap.dedent("""\
        let v: f32 = a[instance_id(0)]
        let square_result: f32
        let r: f32 = v * v
        square_result = r
        b[instance_id(0)] = square_result + f32(1.0)""")
    assert_same_results(m, result)


def test_inlined_helpers_are_removed_unless_kept():
    m = kernel_module(SQUARE, "b[instance_id(0)] = @square(a[instance_id(0)])")
    assert list(inline(m).functions) == ["k"]
    assert list(inline(m, "{keep=true}").functions) == ["square", "k"]


def test_helper_locals_do_not_capture_caller_names():
    m = kernel_module(SQUARE, """
        let r: f32 = f32(10.0)
        let v: f32 = a[instance_id(0)]
        b[instance_id(0)] = @square(v + r) + r + v
    """)
    result = inline(m)
    assert_same_results(m, result)
    body = print_stmts(result.functions["k"].body)
    assert "let r_1: f32" in body and "let v_1: f32" in body


def test_helper_called_twice_gets_distinct_names():
    m = kernel_module(SQUARE, "b[instance_id(0)] = @square(a[instance_id(0)]) + @square(f32(2.0))")
    result = inline(m)
    assert_same_results(m, result)


EARLY = """
func @clamp_sqrt(in x: f32, in limit: i32) -> f32 {
  if x < f32(0.0) {
    return f32(0.0)
  }
  let v: f32 = x
  for i in 0 .. 3 step 1 {
    if v > f32(limit) {
      return f32(limit)
    }
    v = v * f32(1.5)
  }
  return sqrt(v)
}
"""


def test_early_returns_are_lowered_correctly():
    m = kernel_module(EARLY, "b[instance_id(0)] = @clamp_sqrt(a[instance_id(0)], n) + f32(1.0)")
    result = inline(m)
    assert calls_in(result) == []
    assert "clamp_sqrt_done" in print_stmts(result.functions["k"].body)
    for n in (0, 2, 5):
        assert_same_results(m, result, n)


def test_void_helper_with_early_return():
    helpers = """
    func @put(inout out: f32[M], in i: i64, in v: f32) {
      if v < f32(0.0) {
        return
      }
      out[i] = v * f32(2.0)
    }
    """
    m = kernel_module(helpers, """
        b[instance_id(0)] = f32(7.0)
        @put(b, instance_id(0), a[instance_id(0)])
    """)
    result = inline(m)
    assert calls_in(result) == []
    assert_same_results(m, result)


def test_buffer_arguments_and_shape_symbols_map_to_the_caller():
    helpers = """
    func @total(in data: f32[M]) -> f32 {
      let s: f32 = f32(0.0)
      for i in 0 .. M step 1 {
        s = s + data[i]
      }
      return s
    }
    """
    m = kernel_module(helpers, "b[instance_id(0)] = @total(a)")
    result = inline(m)
    body = print_stmts(result.functions["k"].body)
    assert "for i in 0 .. N" in body and "a[i]" in body
    assert_same_results(m, result)


def test_helpers_calling_helpers_are_inlined_completely():
    helpers = SQUARE + """
    func @quad(in v: f32) -> f32 {
      return @square(@square(v))
    }
    """
    m = kernel_module(helpers, "b[instance_id(0)] = @quad(a[instance_id(0)])")
    result = inline(m)
    assert calls_in(result) == [] and list(result.functions) == ["k"]
    assert_same_results(m, result)


BUMP = """
func @bump(inout data: f32[M]) -> f32 {
  data[0] = data[0] + f32(100.0)
  return f32(1.0)
}
"""


def test_loads_before_a_call_see_memory_before_the_call():
    m = kernel_module(BUMP, "b[0] = a[0] + @bump(a) + a[0]", replication="1")
    result = inline(m)
    assert calls_in(result) == []
    assert_same_results(m, result)


def test_short_circuit_skips_calls_in_the_right_operand():
    m = kernel_module(BUMP, """
        if n > i32(2) && @bump(a) > f32(0.0) {
          b[0] = f32(1.0)
        }
        if n > i32(2) || @bump(a) > f32(0.0) {
          b[1] = f32(1.0)
        }
    """, replication="1")
    result = inline(m)
    assert calls_in(result) == []
    for n in (1, 5):
        assert_same_results(m, result, n)


def test_calls_in_loop_conditions_run_every_iteration():
    helpers = """
    func @limit(in data: f32[M], in i: i64) -> i64 {
      if data[0] > f32(3.0) {
        return i64(4)
      }
      return i64(2) + i
    }
    """
    m = kernel_module(helpers, """
        let i: i64 = 0
        while i < @limit(a, i64(1)) {
          b[i] = f32(i)
          i = i + 1
        }
        for j in 0 .. @limit(a, i64(0)) step 1 {
          a[0] = a[0] + f32(1.0)
          b[j] = b[j] + f32(1.0)
        }
    """, replication="1")
    result = inline(m)
    assert calls_in(result) == []
    assert_same_results(m, result)


def test_recursive_helpers_are_left_alone():
    helpers = """
    func @forever(in v: f32) -> f32 {
      return @forever(v)
    }
    """
    m = kernel_module(helpers, """
        if false {
          b[0] = @forever(f32(1.0))
        }
        b[instance_id(0)] = @square(f32(2.0))
    """.replace("@square(f32(2.0))", "f32(2.0)"))
    result = run_pipeline(m, "inline")
    assert calls_in(result) == ["forever"]
    assert "forever" in result.functions


def test_inline_does_not_mutate_its_input():
    m = kernel_module(SQUARE, "b[instance_id(0)] = @square(a[instance_id(0)])")
    before = repr(m)
    inline(m)
    assert repr(m) == before
