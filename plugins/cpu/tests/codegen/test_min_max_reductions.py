"""Float min/max reductions in inner loops (max pooling's ``acc =
max(acc, x[k])``): LLVM 22's loop vectoriser miscompiles llvm.maxnum /
llvm.minnum reductions whose trip count is not a multiple of the vector
width (it skips the last iterations), which made ONNX MaxPool wrong on
AVX-512 hosts.  Trip counts around every vector width, with and without
lane strips, with NaNs, against the interpreter."""
import numpy as np
import pytest

from hpvm.ir.text import parse_module
from hpvm_cpu.codegen.testing import assert_matches_reference, run_cpu

WINDOW_REDUCTION = """hpvm 1.0
module m
func @k(in x: f32[N, 5, WIDTH], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let acc: f32 = x[i, 0, 0]
  for r in 0 .. 5 step 1 {
    for s in 0 .. WIDTH step 1 {
      acc = OP(acc, x[i, r, s])
    }
  }
  y[i] = acc
}
graph @main() {
}
root @main
"""


def window_reduction(op: str, width: int):
    """The kernel with constant trip counts, as tensor-op lowerings have."""
    return parse_module(WINDOW_REDUCTION.replace("OP", op).replace("WIDTH", str(width)))


@pytest.mark.parametrize("width", [3, 5, 7, 9, 13, 17, 31])
@pytest.mark.parametrize("lanes", [0, 16])
@pytest.mark.parametrize("op, extreme", [("max", 100.0), ("min", -100.0)])
def test_min_max_over_a_window_sees_every_element(op, extreme, width, lanes):
    module = window_reduction(op, width)
    rng = np.random.default_rng(width)
    x = rng.standard_normal((37, 5, width)).astype(np.float32)
    # The extreme sits in the last column, which a vector loop that drops
    # its remainder never reads.
    x[:, 2, -1] = extreme
    result = run_cpu(module, "k", {"x": x}, (37,), options={"lanes": lanes})
    np.testing.assert_array_equal(result["y"], np.full(37, extreme, np.float32))
    assert_matches_reference(module, "k", {"x": x}, (37,), result)


@pytest.mark.parametrize("op, expected", [("max", [34.0, 69.0]), ("min", [0.0, 36.0])])
def test_min_max_ignore_nan_operands_like_fmin_and_fmax(op, expected):
    x = np.arange(2 * 5 * 7, dtype=np.float32).reshape(2, 5, 7)
    x[0, 1, 3] = np.nan
    x[1, 0, 0] = np.nan  # the start value itself
    module = window_reduction(op, 7)
    result = run_cpu(module, "k", {"x": x}, (2,))
    np.testing.assert_array_equal(result["y"], expected)
    assert_matches_reference(module, "k", {"x": x}, (2,), result)


WHOLE_REDUCTION = """hpvm 1.0
module m
func @k(in x: f32[4, 6], out y: f32[]) {
  let i: i64 = instance_id(0)
  let acc: f32 = f32(inf)
  for r in 0 .. 4 step 1 {
    for s in 0 .. 6 step 1 {
      acc = min(acc, x[r, s])
    }
  }
  y[i] = acc
}
graph @main() {
}
root @main
"""


def test_a_reduction_of_a_whole_tensor_is_not_vectorised_across_instances():
    """Every instance would compute the same chain of min selects; LLVM's
    loop vectoriser took 18 s over this one (its loops unrolled), so the
    instance loop is kept scalar (lanes.repeats_uniform_work)."""
    from hpvm_cpu.codegen.lanes import repeats_uniform_work
    module = parse_module(WHOLE_REDUCTION)
    assert repeats_uniform_work(module.functions["k"], 0)
    assert not repeats_uniform_work(window_reduction("min", 5).functions["k"], 0)
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 7
    result = run_cpu(module, "k", {"x": x}, (1,))
    np.testing.assert_array_equal(result["y"], np.float32(-7))
    assert_matches_reference(module, "k", {"x": x}, (1,), result)


FROM_A_NUMBER = """hpvm 1.3
module m
func @k(in x: f32[N, 9], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let acc: f32 = START
  for s in 0 .. 9 step 1 {
    acc = OP(acc, x[i, s] + f32(1.0))
  }
  y[i] = acc
}
graph @main() {
}
root @main
"""


@pytest.mark.parametrize("lanes", [0, 16])
@pytest.mark.parametrize("op, start", [("min", "f32(1e30)"), ("max", "f32(-inf)")])
def test_an_accumulator_from_a_number_takes_one_compare_and_still_skips_nan(op, start, lanes):
    """hpvm.ir.nan_free: ``acc`` never holds NaN, so fmin(acc, v) is
    ``v < acc ? v : acc`` (x86's minps) with no NaN test, and a NaN ``v``
    still leaves ``acc`` as it was, as fmin does."""
    from hpvm_cpu.codegen import compile_kernel_node
    module = parse_module(FROM_A_NUMBER.replace("OP", op).replace("START", start))
    kernel = compile_kernel_node(module, "k", 1)
    assert "fcmp uno" not in kernel.llvm_ir
    x = np.random.default_rng(0).standard_normal((35, 9)).astype(np.float32)
    x[3, 4] = x[5, 0] = x[5, 8] = np.nan
    x[7, :] = np.nan  # every value NaN: the start value stays
    result = run_cpu(module, "k", {"x": x}, (35,), options={"lanes": lanes})
    assert not np.isnan(result["y"]).any()
    assert result["y"][7] == (np.float32(1e30) if op == "min" else -np.inf)
    assert_matches_reference(module, "k", {"x": x}, (35,), result)
    # an accumulator that starts from a loaded value keeps the NaN test
    loaded = FROM_A_NUMBER.replace("OP", op).replace("START", "x[i, 0]")
    assert "fcmp uno" in compile_kernel_node(parse_module(loaded), "k", 1).llvm_ir
