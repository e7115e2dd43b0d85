"""Loops asked to unroll in full, emitted as vector code
(codegen/vector_loops.py): which loops qualify, the vector form in the
LLVM IR, and results equal to the interpreter's at every vector width,
for bodies with vector forms, bodies computed lane by lane, and loops
whose iterations depend on one another (left scalar)."""
import numpy as np
import pytest
from llvmlite import ir

from hpvm.ir.kernel import For
from hpvm.ir.types import F32, F64
from hpvm.ir.visit import walk
from hpvm_cpu.codegen.functions import build_module
from hpvm_cpu.codegen.state import BufferView
from hpvm_cpu.codegen.testing import run_cpu, run_reference
from hpvm_cpu.codegen.vector_loops import vector_width

from .test_lanes import module

TILE = """
func @k(in restrict a: f32[M, 4], in restrict b: f32[4, N], in restrict bias: f32[N],
        out y: f32[M, N]) {
  let m: i64 = instance_id(0)
  for t in 0 .. N / 16 step 1 {
    let col: i64 = t * 16
    private acc: f32[2, 16]
    for k in 0 .. 4 step 1 {
      let a0: f32 = a[m, k]
      let a1: f32 = a[(m + 1) % M, k]
      for j in 0 .. 16 step 1 [unroll = 16] {
        let v: f32 = b[k, col + j]
        acc[0, j] = acc[0, j] + a0 * v
        acc[1, j] = acc[1, j] + a1 * v
      }
    }
    for j in 0 .. 16 step 1 [unroll = 16] {
      y[m, col + j] = min(max(acc[0, j] + bias[col + j], f32(0.0)), f32(6.0)) - acc[1, j]
    }
  }
}
"""

LANE_BY_LANE = """
func @k(in restrict x: f32[N], out y: f32[N], out z: i32[N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. 8 step 1 [unroll = 8] {
    let g: f32 = x[(i * 8 + j * 3) % N]
    let q: f32 = g / (f32(j) + f32(1.0))
    y[i * 8 + j] = select(j < 3, exp(q), q * f32(2.0))
    z[i * 8 + 7 - j] = i32(j) * i32(5) / i32(3) + i32(g > f32(0.0))
  }
}
"""

SHIFT = """
func @k(inout b: f32[N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. 8 step 1 [unroll = 8] {
    b[j + 1] = b[j] + f32(1.0)
  }
}
"""

COPY = """
func @k(inout b: f32[N], inout y: f32[N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. 8 step 1 [unroll = 8] {
    y[i * 8 + j] = b[i * 8 + j + 1]
  }
}
"""

SAME_ELEMENT = """
func @k(inout b: f32[N]) {
  let i: i64 = instance_id(0)
  for j in 0 .. 8 step 1 [unroll = 8] {
    b[0] = b[0] * f32(2.0) + f32(j)
  }
}
"""


def loop_widths(text, views, bits=512):
    return [vector_width(loop, views.get, bits) for loop in walk(module(text).functions["k"].body)
            if isinstance(loop, For) and loop.unroll]


def views(*names, element=F32, unaliased=True):
    pointer = ir.Constant(ir.PointerType(), None)
    return {n: BufferView(element, pointer, (), unaliased=unaliased) for n in names}


def run_both(text, args, replication, vector_width=None):
    """The kernel on the cpu (instances one at a time: lane strips would
    turn its loop inside out) against the interpreter."""
    mod = module(text)
    options = {"vector_width": vector_width, "lanes": 0}
    actual = run_cpu(mod, "k", args, replication, options=options)
    expected = run_reference(mod, "k", args, replication)
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-6, atol=1e-6, err_msg=name)


def test_tile_loops_take_a_vector_of_the_widest_lanes_dividing_the_trip():
    buffers = views("a", "b", "bias", "y", "acc")
    assert loop_widths(TILE, buffers) == [16, 16]
    assert loop_widths(TILE, buffers, bits=256) == [8, 8]
    assert loop_widths(TILE.replace("16", "12"), buffers) == [4, 4]
    assert loop_widths(TILE.replace("16", "3"), buffers) == [0, 0]
    assert loop_widths(TILE, views("a", "b", "bias", "y", "acc", element=F64)) == [8, 8]
    assert loop_widths(TILE, buffers, bits=0) == [0, 0]


def test_loops_whose_iterations_meet_stay_scalar():
    assert loop_widths(SHIFT, views("b")) == [0]
    assert loop_widths(SAME_ELEMENT, views("b")) == [0]


def test_a_loop_reading_a_buffer_that_may_be_the_one_it_writes_stays_scalar():
    assert loop_widths(COPY, views("b", "y", unaliased=False)) == [0]
    assert loop_widths(COPY, {**views("b"), **views("y", unaliased=False)}) == [8]
    b = np.arange(24, dtype=np.float32)
    run_both(COPY, {"b": b, "y": np.zeros(24, np.float32)}, (2,))


def test_the_llvm_ir_holds_vector_loads_and_stores():
    mod = module(TILE)
    vectors, _ = build_module(mod, {"k": 1}, "m", vector_bits=512)
    scalars, _ = build_module(mod, {"k": 1}, "m", vector_bits=0)
    assert "load <16 x float>" in vectors and "store <16 x float>" in vectors
    assert "<16 x float>" not in scalars


@pytest.mark.parametrize("width", [None, 256, 128])
@pytest.mark.parametrize("m, n", [(3, 16), (5, 48)])
def test_a_register_tile_matches_the_interpreter(width, m, n):
    rng = np.random.default_rng(m * n)
    args = {"a": rng.standard_normal((m, 4), dtype=np.float32),
            "b": rng.standard_normal((4, n), dtype=np.float32),
            "bias": rng.standard_normal(n, dtype=np.float32),
            "y": np.zeros((m, n), np.float32)}
    run_both(TILE, args, (m,), width)


@pytest.mark.parametrize("width", [None, 128])
def test_gathers_scatters_and_scalar_only_operations_run_lane_by_lane(width):
    n = 24
    x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    args = {"x": x, "y": np.zeros(n, np.float32), "z": np.zeros(n, np.int32)}
    assert loop_widths(LANE_BY_LANE, views("x", "y", "z")) == [8]
    run_both(LANE_BY_LANE, args, (3,), width)


@pytest.mark.parametrize("text", [SHIFT, SAME_ELEMENT])
def test_dependent_iterations_keep_their_order(text):
    run_both(text, {"b": np.arange(10, dtype=np.float32)}, (1,))
