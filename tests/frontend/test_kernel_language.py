"""The kernel language: types, operators, control flow, helpers, arrays,
atomics, hints.  Checked on the IR and, for behaviour, on the interpreter."""
import math

import numpy as np

import hpvm.lang as hl
from hpvm.interp import run_module
from hpvm.ir.kernel import (
    ArrayDecl, AtomicUpdate, Barrier, Binary, Cast, Const, For, If, Intrinsic, Let, Load, Select, While,
)
from hpvm.ir.types import F32, F64, I64
from hpvm.ir.visit import walk
from hpvm.lang import (
    Buffer, InOut, Out, atomic_add, atomic_max, barrier, f32, f64, i32, i64, instance_id, local_array,
    loop, parallel_loop,
)

SCALE = 3


def body_of(program, node=0):
    module = program.build()
    graph = module.root_graph
    return module.function(graph.nodes[node].body.function).body


def nodes_of(stmts, cls):
    return [s for s in walk(tuple(stmts)) if isinstance(s, cls)]


def test_parallel_loop_variables_are_instance_ids():
    @hl.program
    def p(x: Buffer[f32, "H", "W"]):
        for i, j in parallel_loop(H, W, outs=(x,)):
            x[i, j] = 1.0
    body = body_of(p)
    assert [(s.name, s.value.dim) for s in body[:2]] == [("i", 0), ("j", 1)]


def test_literal_adopts_the_type_of_the_other_operand():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = x[i] * 2 + 0.5
    store = body_of(p)[-1]
    consts = nodes_of([store], Const)
    assert {c.type for c in consts} == {F32}


def test_variable_initialised_with_literal_takes_type_of_later_value():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,)):
            acc = 0.0
            for k in range(3):
                acc += x[i]
            y[i] = acc
    lets = [s for s in nodes_of(body_of(p), Let) if s.name == "acc"]
    assert lets[0].type == F32


def test_unconstrained_literals_are_i64_and_f64():
    @hl.program
    def p(x: Buffer[f64, "N"], n: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x, n)):
            a = 1
            b = 2.0
            n[i] = a
            x[i] = b
    lets = {s.name: s.type for s in nodes_of(body_of(p), Let)}
    assert lets["a"] == I64 and lets["b"] == F64


def test_annotated_local_has_the_declared_type():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            acc: f32 = 0
            x[i] = acc
    assert [s.type for s in nodes_of(body_of(p), Let) if s.name == "acc"] == [F32]


def test_integers_widen_implicitly():
    @hl.program
    def p(x: Buffer[i64, "N"], n: i32):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = i + n
    store = body_of(p)[-1]
    assert isinstance(store.value.rhs, Cast) and store.value.rhs.type == I64


def test_constant_literal_expressions_fold_with_c_semantics():
    @hl.program
    def p(x: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = -7 // 2 + SCALE * 2
    assert body_of(p)[-1].value == Const(3, I64)


def test_floor_division_of_floats_is_floor():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = x[i] // 2
    value = body_of(p)[-1].value
    assert isinstance(value, Intrinsic) and value.name == "floor"


def test_math_module_and_lang_functions_become_intrinsics():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            x[i] = math.sqrt(x[i]) + hl.exp(x[i]) + np.tanh(x[i]) + abs(x[i]) + max(x[i], 1.0, 2.0)
    names = {e.name for e in nodes_of(body_of(p), Intrinsic)}
    assert names == {"sqrt", "exp", "tanh", "abs", "max"}


def test_math_on_literals_folds():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = math.sqrt(4.0) * math.pi
    assert body_of(p)[-1].value == Const(2 * math.pi, F32)


def test_comparison_chain_becomes_land():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            if 0 < i < N - 1 and not i == 3:
                x[i] = 1.0
    cond = nodes_of(body_of(p), If)[0].cond
    assert isinstance(cond, Binary) and cond.op == "land"


def test_safe_conditional_expression_is_a_select():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            x[i] = 1.0 if i > 2 else 2.0
    assert isinstance(body_of(p)[-1].value, Select)


def test_conditional_load_becomes_an_if():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(y,)):
            y[i] = x[i - 1] if i > 0 else 0.0
    body = body_of(p)
    assert not nodes_of(body, Select) and len(nodes_of(body, If)) == 1
    out = run_module(p.build(), {"x": np.arange(4, dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], [0, 0, 1, 2])


def test_while_loop_and_elif():
    @hl.program
    def p(x: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            n = i
            steps = 0
            while n > 0:
                if n % 3 == 0:
                    n -= 3
                elif n % 2 == 0:
                    n -= 2
                else:
                    n -= 1
                steps += 1
            x[i] = steps
    assert nodes_of(body_of(p), While)
    out = run_module(p.build(), {"x": np.zeros(7, np.int64)})
    np.testing.assert_array_equal(out["x"], [0, 1, 1, 1, 2, 3, 2])


def test_variable_used_after_its_block_is_hoisted():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            if x[i] > 0:
                v = 1.0
            else:
                v = -1.0
            x[i] = v
    body = body_of(p)
    hoisted = [s for s in body if isinstance(s, Let) and s.name == "v"]
    assert hoisted and hoisted[0].value is None and hoisted[0].type == F32


def test_tuple_assignment_evaluates_right_sides_first():
    @hl.program
    def p(x: Buffer[i64, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            a, b = 1, 2
            a, b = b, a
            x[i] = a * 10 + b
    out = run_module(p.build(), {"x": np.zeros(2, np.int64)})
    np.testing.assert_array_equal(out["x"], [21, 21])


def test_loop_hints_and_steps():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, outs=(x,)):
            for k in loop(0, 8, step=2, unroll=4, trip_count=4, ivdep=True):
                x[i] += 1.0
            for k in range(10, 0, -3):
                x[i] += 1.0
    loops = nodes_of(body_of(p), For)
    assert (loops[0].step, loops[0].unroll, loops[0].trip_count, loops[0].ivdep) == (2, 4, 4, True)
    assert loops[1].step == -3
    out = run_module(p.build(), {"x": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(out["x"], [8, 8])


@hl.kernel
def clamp(v: i64, lo: i64, hi: i64) -> i64:
    if v < lo:
        return lo
    elif v > hi:
        return hi
    return v


@hl.kernel
def add_into(dst: Buffer[f32, "M"], k: i64, value: f32):
    dst[k] = dst[k] + value


def test_helpers_are_inlined_with_renamed_locals():
    @hl.program
    def p(x: Buffer[f32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(x,)):
            add_into(x, i, f32(clamp(i, 1, 2)))
    module = p.build()
    assert len(module.functions) == 1
    names = {s.name for s in nodes_of(module.function("loop0").body, Let)}
    assert {"clamp_result", "add_into_value"} <= names   # simple arguments are passed directly
    out = run_module(module, {"x": np.zeros(4, np.float32)})
    np.testing.assert_array_equal(out["x"], [1, 1, 2, 2])


def test_private_and_local_arrays_and_barrier():
    @hl.kernel
    def k(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]]):
        i = instance_id(0)
        tile = local_array(f32, (64,))
        tmp = hl.private_array(f32, (2,))
        tile[i] = x[i]
        barrier()
        tmp[0] = tile[N - 1 - i]
        y[i] = tmp[0]
    function = k.function()
    decls = [(d.name, d.space) for d in nodes_of(function.body, ArrayDecl)]
    assert decls == [("tile", "local"), ("tmp", "private")]
    assert nodes_of(function.body, Barrier)


def test_atomics_update_and_return_the_old_value():
    @hl.program
    def p(x: Buffer[i32, "N"], counts: Buffer[i32, 4], last: Buffer[i32, "N"]):
        for i in parallel_loop(N, ins=(x,), outs=(counts, last)):
            old = atomic_add(counts[x[i]], 1)
            atomic_max(counts[0], 0)
            last[i] = old
    updates = nodes_of(body_of(p), AtomicUpdate)
    assert [(u.op, u.result is not None) for u in updates] == [("add", True), ("max", False)]
    out = run_module(p.build(), {"x": np.array([1, 1, 3], np.int32)})
    np.testing.assert_array_equal(out["counts"], [0, 2, 0, 1])


def test_shape_and_len_give_dimensions():
    @hl.program
    def p(x: Buffer[f32, "H", 4]):
        for i in parallel_loop(H, outs=(x,)):
            x[i, 0] = f32(x.shape[1] + len(x))
    out = run_module(p.build(), {"x": np.zeros((3, 4), np.float32)})
    np.testing.assert_array_equal(out["x"][:, 0], [7, 7, 7])


def test_kernel_directions_are_inferred_from_use():
    @hl.kernel
    def k(a: Buffer[f32, "N"], b: Buffer[f32, "N"], c: Buffer[f32, "N"], d: InOut[Buffer[f32, "N"]]):
        i = instance_id(0)
        b[i] = a[i]
        c[i] = c[i] + 1.0
    assert [p.direction for p in k.function().params] == ["in", "out", "inout", "inout"]


def test_flat_indexing_of_a_two_dimensional_buffer():
    @hl.program
    def p(x: Buffer[f32, "H", "W"]):
        for k in parallel_loop(H * W, outs=(x,)):
            x[k] = f32(k)
    assert len(body_of(p)[-1].indices) == 1
    out = run_module(p.build(), {"x": np.zeros((2, 3), np.float32)})
    np.testing.assert_array_equal(out["x"], [[0, 1, 2], [3, 4, 5]])


def test_integer_division_truncates_toward_zero_at_run_time():
    @hl.program
    def p(a: Buffer[i32, "N"], q: Buffer[i32, "N"]):
        for i in parallel_loop(N, ins=(a,), outs=(q,)):
            q[i] = a[i] // 2
    out = run_module(p.build(), {"a": np.array([-7, 7], np.int32)})
    np.testing.assert_array_equal(out["q"], [-3, 3])


def test_load_in_a_loop_reads_buffer():
    @hl.program
    def p(x: Buffer[f32, "N"], s: Buffer[f32, 1]):
        for i in parallel_loop(1, ins=(x,), outs=(s,)):
            for k in range(N):
                s[0] += x[k]
    assert nodes_of(body_of(p), Load)
