"""Lane strips (codegen/lanes.py): kernels whose body loops run several
adjacent instances together, checked against the interpreter on sizes
that are not multiples of the strip, single-element dimensions, symbolic
sizes and varying control flow."""
import numpy as np
import pytest

from hpvm.ir.kernel import ArrayDecl, For, Return, Store
from hpvm.ir.text import parse_module
from hpvm.ir.visit import walk
from hpvm_cpu.codegen.lanes import strip_body
from hpvm_cpu.codegen.testing import map_function, run_cpu, run_reference
from hpvm.ir.types import F32

MATMUL = """
func @k(in restrict a: f32[M, K], in restrict b: f32[K, N], out restrict c: f32[M, N]) {
  let i: i64 = instance_id(0)
  let j: i64 = instance_id(1)
  let acc: f32 = f32(0.0)
  for k in 0 .. K step 1 [unroll = 4] {
    let av: f32 = a[i, k]
    acc = acc + av * b[k, j]
  }
  c[i, j] = acc
}
"""

TRIANGLE = """
func @k(in x: f32[K, N], out y: f32[N]) {
  let j: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  let hits: i32 = i32(0)
  for k in 0 .. K step 1 {
    if x[k, j] > f32(0.0) {
      acc = acc + x[k, j]
      hits = hits + i32(1)
    }
    for t in 0 .. j % 3 step 1 {
      acc = acc - f32(0.5)
    }
  }
  y[j] = acc + f32(hits)
}
"""

RANK3 = """
func @k(in x: f32[A, B, C], out y: f32[A, B, C]) {
  let acc: f32 = f32(0.0)
  for r in 0 .. 3 step 1 {
    acc = acc + x[instance_id(0), instance_id(1), instance_id(2)] * f32(r)
  }
  y[instance_id(0), instance_id(1), instance_id(2)] = acc + f32(instance_count(2))
}
"""


def module(text):
    return parse_module("hpvm 1.0\nmodule m\n" + text + "\ngraph @main() {\n}\nroot @main\n")


def kernel(text):
    return module(text).functions["k"]


def run_both(text, args, replication, lanes=4, threads=1, rows=1):
    mod = module(text)
    options = {"lanes": lanes, "rows": rows}
    actual = run_cpu(mod, "k", args, replication, threads=threads, options=options)
    expected = run_reference(mod, "k", args, replication)
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


def matmul_args(m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((m, k), dtype=np.float32),
            "b": rng.standard_normal((k, n), dtype=np.float32),
            "c": np.zeros((m, n), np.float32)}


def test_matmul_kernel_is_stripped_with_vectorisable_lane_loops():
    body = strip_body(kernel(MATMUL), {1: 8})
    lane_loops = [s for s in walk(body) if isinstance(s, For) and s.var == "lane"]
    assert lane_loops and all(loop.ivdep and loop.trip_count == 8 for loop in lane_loops)


def test_uniform_values_stay_scalars_outside_lane_loops():
    body = strip_body(kernel(MATMUL), {1: 8})
    (k_loop,) = [s for s in walk(body) if isinstance(s, For) and s.var == "k"]
    assert k_loop.unroll == 4
    assert k_loop.body[0].name == "av"  # a[i, k] is the same for every lane


@pytest.mark.parametrize("m, k, n", [(5, 7, 37), (3, 4, 3), (1, 1, 1), (2, 9, 8), (1, 5, 17)])
def test_matmul_matches_the_interpreter_on_ragged_sizes(m, k, n):
    run_both(MATMUL, matmul_args(m, k, n), (m, n))


@pytest.mark.parametrize("threads", [1, 2])
def test_strips_split_across_threads_match_the_interpreter(threads):
    run_both(MATMUL, matmul_args(7, 6, 45), (7, 45), lanes=16, threads=threads)


@pytest.mark.parametrize("n, threads", [(1, 1), (13, 1), (13, 2), (40, 2)])
def test_varying_ifs_and_loops_match_the_interpreter(n, threads):
    x = np.random.default_rng(1).standard_normal((6, n), dtype=np.float32)
    run_both(TRIANGLE, {"x": x, "y": np.zeros(n, np.float32)}, (n,), threads=threads)


def test_varying_control_runs_inside_lane_loops():
    body = strip_body(kernel(TRIANGLE), {0: 4})
    lane_loops = [s for s in walk(body) if isinstance(s, For) and s.var == "lane"]
    assert any(not loop.ivdep for loop in lane_loops)  # holds the varying if / loop


@pytest.mark.parametrize("shape", [(2, 3, 9), (1, 1, 5), (2, 2, 1)])
def test_rank3_kernels_match_the_interpreter(shape):
    x = np.random.default_rng(2).standard_normal(shape, dtype=np.float32)
    run_both(RANK3, {"x": x, "y": np.zeros(shape, np.float32)}, shape)


def test_kernels_without_loops_are_left_to_llvm():
    assert strip_body(map_function({"a": F32}, F32, lambda a: a * 2.0), {0: 8}) is None


def test_kernels_that_return_early_are_not_stripped():
    stripped = kernel(MATMUL)
    early = stripped.__class__(stripped.name, stripped.params, (Return(),) + stripped.body)
    assert strip_body(early, {1: 8}) is None


def test_lanes_zero_compiles_the_plain_instance_loop():
    run_both(MATMUL, matmul_args(3, 5, 20), (3, 20), lanes=0)
    assert not any(isinstance(s, Store) and s.buffer == "acc"
                   for s in walk(kernel(MATMUL).body))


@pytest.mark.parametrize("m, n, threads", [(9, 37, 2), (4, 16, 1), (1, 5, 1), (3, 3, 2)])
def test_blocks_of_rows_match_the_interpreter(m, n, threads):
    run_both(MATMUL, matmul_args(m, 6, n), (m, n), lanes=8, rows=2, threads=threads)
    run_both(RANK3, {"x": np.ones((2, m, n), np.float32), "y": np.zeros((2, m, n), np.float32)},
             (2, m, n), lanes=4, rows=3, threads=threads)


def test_index_variables_are_substituted_not_stored():
    body = strip_body(kernel(MATMUL), {0: 2, 1: 8})
    arrays = {s.name for s in walk(body) if isinstance(s, ArrayDecl)}
    assert not arrays & {"i", "j"}  # they read instance_id(d) + row / lane
