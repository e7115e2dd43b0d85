"""The affine dependence test (core/passes/affine_dependences.py) and its
solver (linear_system.py): checked against every pair of iterations of
small loops, and on what it lets the loop passes do (a symmetric result
stored with its mirror runs as instances, bit for bit)."""
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline
from hpvm.passes.affine_dependences import apart_in_iterations, never_after
from hpvm.passes.linear_system import ONE, solvable

from benchmarks import polybench


def test_the_solver_finds_no_solution_where_there_is_none():
    x, y = "x", "y"
    assert solvable([{x: 1, y: -1}], [{x: 1}, {y: -1, ONE: 3}])    # x = y, 0 <= x, y <= 3
    assert not solvable([{x: 1, y: -1}], [{x: 1, y: -1, ONE: -1}])  # x = y, x >= y + 1
    assert not solvable([{x: 2, ONE: -1}], [])                      # 2x = 1
    assert not solvable([], [{x: 2, ONE: -1}, {x: -2, ONE: 1}])     # 1/2 <= x <= 1/2
    assert solvable([], [{x: 3, y: -3, ONE: -1}, {x: -1, y: 1, ONE: 1}])  # 1/3 <= x - y <= 1
    assert not solvable([], [{x: 3, y: -3, ONE: -1}, {x: -1, y: 1}])      # 1/3 <= x - y <= 0


PROGRAM = """hpvm 1.0
module m

func @k(inout b: f32[N, N]) {
  for i in 0 .. N step 1 {
    for j in BOUNDS step 1 {
      FIRST
      SECOND
    }
  }
}

graph @main(inout b: f32[N, N]) {
  node n = @k
  in b -> n.b
  out n.b -> b
}

root @main
"""
BOUNDS = ("0 .. N", "i .. N", "i + 1 .. N", "0 .. i + 1", "0 .. i")
INDICES = ("i", "j", "0", "i + 1", "j - 1", "N - 1 - i", "2 * i", "i + j")


def loop(bounds: str, first: str, second: str):
    text = PROGRAM.replace("BOUNDS", bounds).replace("FIRST", first).replace("SECOND", second)
    module = parse_module(text)
    return module, module.functions["k"].body[0]


def elements(bounds: str, store: str, load: str, i: int, n: int) -> list[tuple[bool, tuple]]:
    """(store?, element) of every access of iteration ``i`` (n on a side)."""
    low, high = (eval(part, {"i": i, "N": n}) for part in bounds.split(" .. "))
    found = []
    for j in range(low, high):
        scope = {"i": i, "j": j, "N": n}
        found.append((False, tuple(eval(x, scope) for x in load.split(", "))))
        found.append((True, tuple(eval(x, scope) for x in store.split(", "))))
    return found


def iterations_meet(bounds: str, store: str, load: str, n: int = 6) -> bool:
    touched = [elements(bounds, store, load, i, n) for i in range(n)]
    return any(first_store or second_store
               for a, b in itertools.permutations(range(n), 2)
               for first_store, element in touched[a] for second_store, other in touched[b]
               if element == other)


pairs = st.tuples(st.sampled_from(INDICES), st.sampled_from(INDICES)).map(", ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BOUNDS), pairs, pairs)
def test_iterations_found_apart_never_touch_one_element(bounds, store, load):
    """Every access of two different iterations of the loop over i
    compared, six on a side: none touches an element the other stores
    wherever the test says so."""
    module, outer = loop(bounds, f"b[{store}] = b[{load}] + f32(1.0)", "")
    if apart_in_iterations(outer, "b"):
        assert not iterations_meet(bounds, store, load), (bounds, store, load)


@pytest.mark.parametrize("bounds, store, load", [
    ("i .. N", "j, i", "i, j"),          # covariance's mirror: row i from i, column i from i
    ("0 .. i + 1", "j, i", "i, j"),      # the lower triangle's mirror
    ("0 .. i + 1", "i, j", "j, i"),      # a row of the triangle read as a column
    ("i + 1 .. N", "j, i", "i, j"),
    ("0 .. N", "i, j", "i, j - 1"),      # the loop's variable at one position
    ("0 .. N", "2 * i, j", "2 * i + 1, j"),  # even rows stored, odd rows read
])
def test_accesses_meeting_only_in_their_own_iteration_are_apart(bounds, store, load):
    assert apart_in_iterations(loop(bounds, f"b[{store}] = b[{load}] + f32(1.0)", "")[1], "b")
    assert not iterations_meet(bounds, store, load)


@pytest.mark.parametrize("bounds, store, load", [
    ("0 .. N", "j, i", "i, j"),          # a transpose in place: (i, j) and (j, i) meet
    ("i .. N", "j, i", "j, i + 1"),
    ("0 .. i + 1", "i, j", "j, 0"),
    ("0 .. N", "i + j, 0", "i, 0"),
])
def test_accesses_meeting_across_iterations_are_not_apart(bounds, store, load):
    assert not apart_in_iterations(loop(bounds, f"b[{store}] = b[{load}] + f32(1.0)", "")[1],
                                   "b")
    assert iterations_meet(bounds, store, load)


FUSION = """hpvm 1.0
module m

func @k(inout b: f32[N], inout c: f32[N]) {
  for i in 1 .. N - 1 step 1 {
    FIRST
  }
  for i in 1 .. N - 1 step 1 {
    SECOND
  }
}

graph @main(inout b: f32[N], inout c: f32[N]) {
  node n = @k
  in b -> n.b
  in c -> n.c
  out n.b -> b
  out n.c -> c
}

root @main
"""


@pytest.mark.parametrize("first, second, legal", [
    ("b[i] = b[i] * f32(2.0)", "c[i] = b[i - 1]", True),    # what an earlier iteration made
    ("b[i] = b[i] * f32(2.0)", "c[i] = b[i + 1]", False),   # what a later one will make
    ("c[i] = b[i + 1]", "b[i] = f32(0.0)", True),           # read before the later store
    ("c[i] = b[i - 1]", "b[i] = f32(0.0)", False),
])
def test_a_second_loop_runs_in_the_first_s_iterations_where_nothing_comes_later(
        first, second, legal):
    module = parse_module(FUSION.replace("FIRST", first).replace("SECOND", second))
    one, two = module.functions["k"].body
    assert never_after(one, one.body, two.body, "b") == legal
    fused = run_pipeline(module, "loop-fusion", verify_each=True)
    assert (len(fused.functions["k"].body) == 1) == legal
    inputs = {"b": np.arange(9, dtype=np.float32), "c": np.zeros(9, np.float32)}
    for port, want in run_module(module, {k: v.copy() for k, v in inputs.items()}).items():
        np.testing.assert_array_equal(run_module(fused, {k: v.copy() for k, v in inputs.items()})[
            port], want)


def test_covariance_runs_its_rows_as_instances_bit_for_bit():
    """PolyBench's covariance stores cov[i, j] and its mirror cov[j, i] in
    one iteration: the rows run as instances, each walking its columns
    in strips with the k loop outside, and compute the same."""
    module = polybench.covariance.build()
    changed = run_pipeline(module, "task-split,loop-interchange,loop-instances",
                           verify_each=True)
    text = print_module(changed)
    assert "node covariance_2 = @covariance_2_instances [max(M, 0)]" in text
    inputs = polybench.inputs_for("covariance", np.random.default_rng(3), 11, 11)
    got = run_module(changed, {k: np.copy(v) for k, v in inputs.items()})
    for port, want in run_module(module, {k: np.copy(v) for k, v in inputs.items()}).items():
        np.testing.assert_array_equal(got[port], want)


STEPPED = """hpvm 1.0
module m

func @k(inout b: f32[N]) {
  for i in 0 .. N step 4 {
    for j in i .. min(i + 4, N) step 1 {
      BODY
    }
  }
}

graph @main(inout b: f32[N]) {
  node n = @k
  in b -> n.b
  out n.b -> b
}

root @main
"""


@pytest.mark.parametrize("body, apart", [
    ("b[j] = b[j] * f32(2.0)", True),                 # strips of 4 elements each
    ("b[i + 3] = b[i] + f32(1.0)", True),
    ("b[j] = b[i + 4] + f32(1.0)", False),            # the next strip's first element
    ("b[i + 1] = b[i + 5]", False),
])
def test_a_loop_stepping_by_more_than_one_counts_its_steps(body, apart):
    """Strips of columns (loop-interchange's): iteration i + 4 starts where
    iteration i stops."""
    module = parse_module(STEPPED.replace("BODY", body))
    assert apart_in_iterations(module.functions["k"].body[0], "b") == apart


IN_BOUNDS = ("i", "j", "0", "N - 1 - i", "N - 1 - j")
in_bounds = st.tuples(st.sampled_from(IN_BOUNDS), st.sampled_from(IN_BOUNDS)).map(", ".join)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BOUNDS), in_bounds, in_bounds, in_bounds)
def test_a_nest_the_test_lets_swap_computes_the_same(bounds, store, load, other):
    """Wherever interchange_problem (with swap_keeps_order) admits the
    swap, the swapped nest computes what the nest as written computes,
    bit for bit."""
    from hpvm.passes.loop_interchange import interchange_problem
    module, outer = loop(bounds, f"b[{store}] = b[{load}] * f32(0.5) + b[{other}]", "")
    if interchange_problem(outer, module.functions["k"], module) is None:
        swapped = run_pipeline(module, "loop-interchange{loops=k.i}", verify_each=True)
        data = {"b": np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)}
        np.testing.assert_array_equal(run_module(swapped, {"b": data["b"].copy()})["b"],
                                      run_module(module, {"b": data["b"].copy()})["b"])


CALLED = """hpvm 1.0
module m

func @corner(in v: f32[N, N]) -> f32 {
  return v[N - 1, 0]
}

func @k(inout b: f32[N, N]) {
  for i in 0 .. N step 1 {
    for j in i .. N step 1 {
      b[j, i] = b[i, j] + @corner(b)
    }
  }
}

graph @main(inout b: f32[N, N]) {
  node n = @k
  in b -> n.b
  out n.b -> b
}

root @main
"""


def test_a_buffer_passed_to_a_helper_may_be_read_anywhere():
    """The mirror store alone meets only in its own iteration; a helper
    given the buffer may read any element of it, another iteration's."""
    module = parse_module(CALLED)
    assert not apart_in_iterations(module.functions["k"].body[0], "b")
    alone = parse_module(CALLED.replace(" + @corner(b)", ""))
    assert apart_in_iterations(alone.functions["k"].body[0], "b")
