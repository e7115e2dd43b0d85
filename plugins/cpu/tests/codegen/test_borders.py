"""Loop partitioning at clamped borders (codegen/borders.py): which clamps
and border tests are removed from the steady body, and kernels that clamp
or test their instance id run against the interpreter on widths below, at and around the borders
and the lane strips."""
import numpy as np
import pytest

from hpvm.ir.kernel import Intrinsic
from hpvm.ir.text import parse_module
from hpvm.ir.visit import walk
from hpvm_cpu.codegen.borders import partition
from hpvm_cpu.codegen.testing import run_cpu, run_reference

BLUR_X = """
func @k(in img: f32[H, W], out bx: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  let left: i64
  let hi: i64 = W - 1
  let v: i64 = x - 1
  left = min(max(v, 0), hi)
  bx[y, x] = img[y, left] + img[y, x] + img[y, max(min(x + 1, hi), 0)]
}
"""

SHIFTED = """
func @k(in img: f32[H, W], in shift: i64, out o: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  o[y, x] = img[y, min(max(x + shift - y, 0), W - 1)] + f32(max(x - 3, 1))
}
"""

WINDOW = """
func @k(in img: f32[W], out o: f32[W]) {
  let x: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for d in -2 .. 3 step 1 {
    acc = acc + img[min(max(x + d, 0), W - 1)]
  }
  o[x] = acc + img[min(max(x + 2, 0), W - 1)]
}
"""

NOT_KNOWN = """
func @k(in img: f32[W], in index: i64[W], in shift: i64, out o: f32[W]) {
  let x: i64 = instance_id(0)
  shift = shift + 1
  o[x] = img[min(max(index[x], 0), W - 1)] + img[min(x + shift, W - 1)]
}
"""


INTERIOR = """
func @k(in img: f32[H, W], out o: f32[H, W]) {
  let y: i64 = instance_id(0)
  let x: i64 = instance_id(1)
  if 0 < x && x < W - 1 && y > 0 {
    o[y, x] = img[y, x - 1] + img[y, x + 1] + img[y - 1, x]
  } else {
    o[y, x] = img[y, x]
  }
}
"""

BORDER_TESTS = """
func @k(in img: f32[W], in edge: i64, out o: f32[W]) {
  let x: i64 = instance_id(0)
  let v: f32 = img[x]
  if x + 2 <= 3 || W - 2 <= x {
    v = f32(0.0)
  }
  if x >= edge {
    v = v + f32(1.0)
  }
  if 1 >= x - 1 {
    v = v * f32(2.0)
  }
  if x < W / 2 {
    v = v - f32(3.0)
  }
  o[x] = v
}
"""


def module(text):
    return parse_module("hpvm 1.0\nmodule m\n" + text + "\ngraph @main() {\n}\nroot @main\n")


def clamps(body):
    return sum(isinstance(n, Intrinsic) and n.name in ("min", "max") for n in walk(body))


def run_both(text, args, replication, lanes=16, threads=1, rows=1):
    mod = module(text)
    actual = run_cpu(mod, "k", args, replication, threads=threads,
                     options={"lanes": lanes, "rows": rows})
    expected = run_reference(mod, "k", args, replication)
    for name, value in expected.items():
        np.testing.assert_array_equal(actual[name], value, err_msg=name)


def test_both_clamps_of_a_neighbour_go_from_the_steady_body():
    kernel = module(BLUR_X).functions["k"]
    found = partition(kernel, 1)
    assert found is not None
    assert clamps(kernel.body) == 4 and clamps(found.body) == 0
    assert len(found.lower) == 2 and len(found.upper) == 2


def test_clamps_of_another_dimension_stay():
    kernel = module(BLUR_X).functions["k"]
    assert partition(kernel, 0) is None


def test_a_window_loop_variable_is_not_an_offset():
    found = partition(module(WINDOW).functions["k"], 0)
    assert found is not None
    assert clamps(found.body) == 2     # the loop's clamp stays, x + 2's goes


def compares(body):
    from hpvm.ir.kernel import Compare
    return sum(isinstance(n, Compare) for n in walk(body))


def test_border_tests_of_the_instance_id_are_decided_in_the_steady_body():
    """``0 < x`` is true past the left border, ``x < W - 1`` before the
    right one; ``y > 0`` tests another dimension and stays."""
    found = partition(module(INTERIOR).functions["k"], 1)
    assert found is not None and compares(found.body) == 1
    assert len(found.lower) == 1 and len(found.upper) == 1


def test_tests_against_constants_are_decided_past_them_and_others_before_them():
    """... and a test that splits the row (``x < W / 2``) is no border."""
    found = partition(module(BORDER_TESTS).functions["k"], 0)
    assert found is not None and compares(found.body) == 1
    assert len(found.lower) == 2 and len(found.upper) == 2


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 17, 40])
def test_border_tests_match_the_interpreter(width):
    img = np.random.default_rng(5).random((4, width), dtype=np.float32)
    run_both(INTERIOR, {"img": img, "o": np.zeros_like(img)}, (4, width))
    run_both(INTERIOR, {"img": img, "o": np.zeros_like(img)}, (4, width), lanes=4, threads=2)
    for edge in (-5, 0, 3, width, 99):
        run_both(BORDER_TESTS, {"img": img[0].copy(), "edge": np.int64(edge),
                                "o": np.zeros_like(img[0])}, (width,), lanes=4)


def test_loaded_indices_and_assigned_parameters_are_not_known():
    assert partition(module(NOT_KNOWN).functions["k"], 0) is None


@pytest.mark.parametrize("width", [1, 2, 3, 5, 16, 17, 33, 100])
def test_blur_rows_match_the_interpreter(width):
    img = np.random.default_rng(width).random((3, width), dtype=np.float32)
    args = {"img": img, "bx": np.zeros_like(img)}
    run_both(BLUR_X, args, (3, width))
    run_both(BLUR_X, args, (3, width), lanes=4, threads=2)


@pytest.mark.parametrize("shift", [-40, -3, 0, 2, 7, 40])
def test_offsets_of_parameters_and_other_dimensions(shift):
    img = np.random.default_rng(1).random((6, 37), dtype=np.float32)
    run_both(SHIFTED, {"img": img, "shift": np.int64(shift), "o": np.zeros_like(img)}, (6, 37))


@pytest.mark.parametrize("width", [1, 4, 5, 40])
def test_a_window_loop_with_strips_matches_the_interpreter(width):
    img = np.random.default_rng(2).random(width, dtype=np.float32)
    run_both(WINDOW, {"img": img, "o": np.zeros_like(img)}, (width,), lanes=4)


def test_the_rows_option_gives_the_same_values():
    img = np.random.default_rng(3).random((9, 21), dtype=np.float32)
    run_both(BLUR_X, {"img": img, "bx": np.zeros_like(img)}, (9, 21), lanes=4, rows=2)


def test_a_long_chain_of_variables_in_a_bound_is_left_as_a_clamp():
    """Each variable doubles the one before: expanded, the bound would
    have 2**40 terms; the clamp against it stays, the other goes."""
    chain = "\n".join(f"  let a{i}: i64 = a{i - 1} + a{i - 1}" for i in range(1, 41))
    text = f"""
func @k(in img: f32[W], out o: f32[W]) {{
  let x: i64 = instance_id(0)
  let a0: i64 = W - W
{chain}
  o[x] = img[min(max(x - 1, 0), a40 + W - 1)]
}}
"""
    found = partition(module(text).functions["k"], 0)
    assert found is not None and len(found.lower) == 1 and not found.upper
    img = np.random.default_rng(4).random(37, dtype=np.float32)
    run_both(text, {"img": img, "o": np.zeros_like(img)}, (37,))


@pytest.mark.parametrize("name", ["branch_stores", "updated_value", "clamped", "interior",
                                  "flat", "row_loops"])
def test_every_written_form_of_a_stencil_matches_numpy(name):
    """benchmarks/stencils.py: the interior tested with branches, clamps,
    interior-only replication; grids narrower than a border, a strip and
    the lanes, and wider."""
    import hpvm
    from benchmarks import stencils
    exe = hpvm.compile(stencils.FORMS[name], targets=["cpu"], options={"lanes": 4})
    rng = np.random.default_rng(6)
    for n, m in [(3, 3), (4, 5), (9, 2 + 4), (7, 37)]:
        inputs = stencils.inputs_for(name, rng, n, m)
        got = np.asarray(exe(**inputs)["b"]).reshape(n, m)
        want = stencils.reference(name, inputs["a"].reshape(n, m))
        np.testing.assert_array_equal(got, want, err_msg=f"{n} x {m}")
