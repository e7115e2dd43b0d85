"""loop-interchange on triangles and bands: an inner loop that starts or
stops at the outer variable plus an offset is swapped with bounds that
run the same iterations (core/passes/triangle_bounds.py), bit for bit;
other bounds that read the outer variable keep the nest."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline

PROGRAM = """hpvm 1.0
module triangle

func @k(in a: f32[M, M], inout b: f32[M, M], out count: i64[1]) {
  let n: i64 = 0
  for OUTER step 1 {
    for INNER step 1 {
      b[i, j] = a[i, j] * f32(2.0) + f32(j)
      n = n + 1
    }
  }
  count[0] = n
}

graph @main(in a: f32[M, M], inout b: f32[M, M], out count: i64[1]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  out n.b -> b
  out n.count -> count
}

root @main
"""
INPUTS = {"a": np.random.default_rng(0).standard_normal((9, 9)).astype(np.float32),
          "b": np.zeros((9, 9), np.float32)}


def nest(outer, inner):
    return parse_module(PROGRAM.replace("OUTER", outer).replace("INNER", inner))


def run(module):
    return run_module(module, {k: v.copy() for k, v in INPUTS.items()})


def swapped_order(module):
    text = print_module(module)
    return [line.split()[1] for line in text.splitlines() if line.strip().startswith("for ")]


@pytest.mark.parametrize("outer, inner, rows", [
    ("j in 0 .. M", "i in j .. M", "for i in 0 .. M step 1 {"),                  # lower
    ("j in 1 .. M - 1", "i in j + 2 .. M", "for i in 1 + 2 .. M step 1 {"),     # shifted
    ("j in 0 .. M", "i in 0 .. j + 1", "for i in 0 .. M - 1 + 1 step 1 {"),      # upper
    ("j in 2 .. M", "i in j - 2 .. j + 1", "for i in 2 - 2 .. M - 1 + 1 step 1 {"),   # band
    ("j in 0 .. M", "i in 3 + j .. M", "for i in 0 + 3 .. M step 1 {"),
])
def test_a_triangle_walked_by_columns_is_walked_by_rows(outer, inner, rows):
    module = nest(outer, inner)
    swapped = run_pipeline(module, "loop-interchange", verify_each=True)
    assert swapped_order(swapped) == ["i", "j"]
    assert rows in print_module(swapped)
    want = run(module)
    for name, value in run(swapped).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)


def test_blocks_need_a_rectangle():
    module = nest("j in 0 .. M", "i in j .. M")
    assert run_pipeline(module, "loop-tile{size=2}") == module
    with pytest.raises(PassError, match="blocks need a rectangle"):
        run_pipeline(module, "loop-tile{loops=k.j size=2}")


def test_bounds_that_read_the_outer_variable_otherwise_keep_the_nest():
    module = nest("j in 0 .. M", "i in 0 .. j * 2")
    assert run_pipeline(module, "loop-interchange") == module
    with pytest.raises(PassError, match="other than as 'j' plus or minus a value"):
        run_pipeline(module, "loop-interchange{loops=k.j}")
    stepped = parse_module(print_module(nest("j in 0 .. M", "i in j .. M"))
                           .replace("for i in j .. M step 1", "for i in j .. M step 2"))
    with pytest.raises(PassError, match="with steps other than 1"):
        run_pipeline(stepped, "loop-interchange{loops=k.j}")


BOUNDS = ("0", "1", "M", "M - 1")
shifts = st.sampled_from(("j", "j + 1", "j - 1", "j + 3", "2 + j", "j - M + 5"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(BOUNDS), st.sampled_from(BOUNDS), st.one_of(st.sampled_from(BOUNDS),
                                                                   shifts),
       st.one_of(st.sampled_from(BOUNDS), shifts))
def test_any_triangle_or_band_runs_the_same_iterations(first, last, start, stop):
    """Counted (``n``) and stored, whatever the offsets, empty rows and
    columns included (the indices stay in range: offsets go both ways)."""
    if "j" not in start + stop:
        return
    guarded = PROGRAM.replace("      b[i, j] =", "      if i >= 0 & i < M {\n        b[i, j] =")
    guarded = guarded.replace("+ f32(j)\n", "+ f32(j)\n      }\n")
    module = parse_module(guarded.replace("OUTER", f"j in {first} .. {last}")
                          .replace("INNER", f"i in {start} .. {stop}"))
    swapped = run_pipeline(module, "loop-interchange{loops=k.j}", verify_each=True)
    want = run(module)
    for name, value in run(swapped).items():
        np.testing.assert_array_equal(value, want[name], err_msg=f"{first} {last} {start} {stop}")
