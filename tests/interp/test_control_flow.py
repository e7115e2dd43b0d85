"""Control flow under SIMT evaluation: short circuits, loops, divergence,
early return, helper calls."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    BOOL, F32, I32, I64, Assign, Binary, BufferType, Call, Const, ExprStmt, For, If,
    InstanceId, KernelFunction, Let, Load, Parameter, Return, Store, Var, While,
)
from hpvm.ir.graph import Module
from hpvm.interp import run_kernel

I = InstanceId(0)


def zero(t=I64):
    return Const(0, t)


def kernel_run(body, params, args, replication, helpers=()):
    function = KernelFunction("k", tuple(params), tuple(body))
    functions = {"k": function, **{h.name: h for h in helpers}}
    return run_kernel(Module("m", functions, {}, "main"), "k", args, replication)


def out_param(t=I64, dims=("M",)):
    return Parameter("out", BufferType(t, dims), "out")


def guarded_positive_kernel(op):
    """out[i] = (i < N) op a[i] > 0, over N + 2 instances."""
    in_range = I.lt(Var("N", I64))
    positive = Load("a", (I,), F32).gt(0.0)
    if op == "lor":
        in_range, positive = I.ge(Var("N", I64)), Load("a", (I,), F32).le(0.0)
    body = (Store("out", (I,), Binary(op, in_range, positive)),)
    params = (Parameter("a", BufferType(F32, ("N",))), out_param(BOOL))
    return body, params


def test_land_does_not_evaluate_its_rhs_where_the_lhs_is_false():
    body, params = guarded_positive_kernel("land")
    a = np.array([1.0, -1.0, 2.0], np.float32)
    out = kernel_run(body, params, {"a": a, "out": np.zeros(5, bool)}, (5,))["out"]
    np.testing.assert_array_equal(out, [True, False, True, False, False])


def test_lor_does_not_evaluate_its_rhs_where_the_lhs_is_true():
    body, params = guarded_positive_kernel("lor")
    a = np.array([1.0, -1.0, 2.0], np.float32)
    out = kernel_run(body, params, {"a": a, "out": np.zeros(5, bool)}, (5,))["out"]
    np.testing.assert_array_equal(out, [False, True, False, True, True])


def test_bitwise_and_evaluates_both_sides_so_the_load_faults():
    body, params = guarded_positive_kernel("and")
    a = np.array([1.0, -1.0, 2.0], np.float32)
    with pytest.raises(ExecutionError, match="out of range"):
        kernel_run(body, params, {"a": a, "out": np.zeros(5, bool)}, (5,))


def sum_loop(start, stop, step, **loop_attrs):
    """out[i] = sum of the loop variable over the loop."""
    return (
        Let("acc", I64, zero()),
        For("t", start, stop, step, (Assign("acc", Var("acc", I64) + Var("t", I64)),),
            **loop_attrs),
        Store("out", (I,), Var("acc", I64)),
    )


def test_for_loop_with_uniform_bounds():
    out = kernel_run(sum_loop(zero(), Const(10, I64), 1), (out_param(),),
                     {"out": np.zeros(3, np.int64)}, (3,))["out"]
    np.testing.assert_array_equal(out, [45, 45, 45])


def test_for_loop_with_per_instance_bounds():
    out = kernel_run(sum_loop(zero(), I + 1, 1), (out_param(),),
                     {"out": np.zeros(6, np.int64)}, (6,))["out"]
    np.testing.assert_array_equal(out, [i * (i + 1) // 2 for i in range(6)])


def test_for_loop_with_negative_step_counts_down():
    body = (
        Let("digits", I64, zero()),
        For("t", I + 3, zero(), -1,
            (Assign("digits", Var("digits", I64) * 10 + Var("t", I64)),)),
        Store("out", (I,), Var("digits", I64)),
    )
    out = kernel_run(body, (out_param(),), {"out": np.zeros(2, np.int64)}, (2,))["out"]
    np.testing.assert_array_equal(out, [321, 4321])


def test_for_loop_with_step_larger_than_one():
    out = kernel_run(sum_loop(Const(1, I64), Const(10, I64), 3), (out_param(),),
                     {"out": np.zeros(1, np.int64)}, (1,))["out"]
    assert out[0] == 1 + 4 + 7


def test_loop_attributes_do_not_change_results():
    body = sum_loop(zero(), I + 1, 1, unroll=4, ivdep=True, trip_count=8)
    out = kernel_run(body, (out_param(),), {"out": np.zeros(4, np.int64)}, (4,))["out"]
    np.testing.assert_array_equal(out, [0, 1, 3, 6])


def collatz_steps(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_loop_with_divergent_trip_counts():
    n, steps = Var("n", I64), Var("steps", I64)
    body = (
        Let("n", I64, I + 1),
        Let("steps", I64, zero()),
        While(n.ne(1), (
            If((n % 2).eq(0), (Assign("n", n / 2),), (Assign("n", n * 3 + 1),)),
            Assign("steps", steps + 1),
        )),
        Store("out", (I,), steps),
    )
    out = kernel_run(body, (out_param(),), {"out": np.zeros(30, np.int64)}, (30,))["out"]
    np.testing.assert_array_equal(out, [collatz_steps(i + 1) for i in range(30)])


def test_if_divergence_runs_each_branch_on_its_instances_only():
    x = Var("x", I64)
    body = (
        Let("x", I64, Const(100, I64)),
        If((I % 3).eq(0), (Assign("x", I),),
           (If((I % 3).eq(1), (Assign("x", -I),)),)),
        Store("out", (I,), x),
    )
    out = kernel_run(body, (out_param(),), {"out": np.zeros(7, np.int64)}, (7,))["out"]
    np.testing.assert_array_equal(out, [0, -1, 100, 3, -4, 100, 6])


def test_early_return_ends_only_the_returning_instances():
    body = (
        Store("out", (I,), Const(1, I64)),
        If((I % 2).eq(0), (Return(),)),
        Store("out", (I,), Const(2, I64)),
    )
    out = kernel_run(body, (out_param(),), {"out": np.zeros(4, np.int64)}, (4,))["out"]
    np.testing.assert_array_equal(out, [1, 2, 1, 2])


def test_return_inside_a_loop_stops_that_instance_only():
    body = (
        For("t", zero(), Const(10, I64), 1, (
            If(Var("t", I64).eq(I), (Return(),)),
            Store("out", (I,), Load("out", (I,), I64) + 1),
        )),
    )
    out = kernel_run(body, (Parameter("out", BufferType(I64, ("M",)), "inout"),),
                     {"out": np.zeros(12, np.int64)}, (12,))["out"]
    np.testing.assert_array_equal(out, [min(i, 10) for i in range(12)])


def test_while_loop_ends_when_every_instance_returned():
    body = (While(Const(True, BOOL), (Return(),)), Store("out", (I,), Const(5, I64)))
    out = kernel_run(body, (out_param(),), {"out": np.zeros(2, np.int64)}, (2,))["out"]
    np.testing.assert_array_equal(out, [0, 0])


SIGN = KernelFunction(
    "sign", (Parameter("x", I64),),
    (If(Var("x", I64).lt(0), (Return(Const(-1, I64)),)),
     If(Var("x", I64).eq(0), (Return(zero()),)),
     Return(Const(1, I64))),
    return_type=I64)


def test_helper_returns_under_divergent_control_flow():
    body = (Store("out", (I,), Call("sign", (I - 2,), I64)),)
    out = kernel_run(body, (out_param(),), {"out": np.zeros(5, np.int64)}, (5,),
                     helpers=(SIGN,))["out"]
    np.testing.assert_array_equal(out, [-1, -1, 0, 1, 1])


FIRST_AT_LEAST = KernelFunction(
    "first_at_least",
    (Parameter("values", BufferType(F32, ("L",))), Parameter("bound", F32)),
    (For("t", zero(), Var("L", I64), 1, (
        If(Load("values", (Var("t", I64),), F32).ge(Var("bound", F32)),
           (Return(Var("t", I64)),)),)),
     Return(Var("L", I64))),
    return_type=I64)


def test_helper_returns_from_inside_a_loop_and_sees_buffer_sizes():
    body = (Store("out", (I,), Call("first_at_least",
                                    (Var("a", BufferType(F32, ("N",))), I.cast(F32)), I64)),)
    params = (Parameter("a", BufferType(F32, ("N",))), out_param())
    a = np.array([0.5, 2.0, 1.0, 4.0], np.float32)
    out = kernel_run(body, params, {"a": a, "out": np.zeros(6, np.int64)}, (6,),
                     helpers=(FIRST_AT_LEAST,))["out"]
    np.testing.assert_array_equal(out, [0, 1, 1, 3, 3, 4])


def test_helper_called_as_a_statement_stores_through_its_buffer_argument():
    put = KernelFunction(
        "put", (Parameter("dst", BufferType(I64, ("L",)), "inout"), Parameter("at", I64)),
        (Store("dst", (Var("at", I64),), Var("at", I64) * 10),))
    body = (If((I % 2).eq(1), (ExprStmt(Call("put", (Var("out", BufferType(I64, ("M",))), I),
                                             None)),)),)
    out = kernel_run(body, (out_param(),), {"out": np.zeros(4, np.int64)}, (4,),
                     helpers=(put,))["out"]
    np.testing.assert_array_equal(out, [0, 10, 0, 30])


def test_variables_declared_in_a_loop_body_start_fresh_each_iteration():
    body = (
        Let("total", I32, Const(0, I32)),
        For("t", zero(), Const(3, I64), 1, (
            Let("step", I32, Const(0, I32)),
            Assign("step", Var("step", I32) + 1),
            Assign("total", Var("total", I32) + Var("step", I32)),
        )),
        Store("out", (I,), Var("total", I32)),
    )
    out = kernel_run(body, (out_param(I32),), {"out": np.zeros(1, np.int32)}, (1,))["out"]
    assert out[0] == 3


def test_negative_zero_constant_keeps_its_sign():
    body = (Store("out", (I,), Const(1.0, F32) / Const(-0.0, F32) + Const(0.0, F32)),)
    out = kernel_run(body, (out_param(F32),), {"out": np.zeros(1, np.float32)}, (1,))["out"]
    assert out[0] == -np.inf


def test_recursive_helper_is_an_error():
    loop = KernelFunction("loop", (Parameter("x", I64),),
                          (Return(Call("loop", (Var("x", I64),), I64)),), return_type=I64)
    body = (Store("out", (I,), Call("loop", (I,), I64)),)
    with pytest.raises(ExecutionError, match="recursion through '@loop'"):
        kernel_run(body, (out_param(),), {"out": np.zeros(1, np.int64)}, (1,), helpers=(loop,))


def test_helper_errors_name_the_helper():
    body = (Store("out", (I,), Call("first_at_least",
                                    (Var("a", BufferType(F32, ("N",))), Const(9.0, F32)), I64)),)
    params = (Parameter("a", BufferType(F32, ("N",))), out_param())
    reader = KernelFunction("first_at_least", FIRST_AT_LEAST.params,
                            (Return(Load("values", (Const(5, I64),), F32).cast(I64)),),
                            return_type=I64)
    with pytest.raises(ExecutionError, match="function '@first_at_least'.*'values' at index 5"):
        kernel_run(body, params, {"a": np.zeros(2, np.float32),
                                  "out": np.zeros(1, np.int64)}, (1,), helpers=(reader,))


def test_running_all_instances_together_equals_running_them_one_at_a_time():
    """Divergent loops, early returns and helper returns: the masked SIMT
    run must agree with separate single-instance runs."""
    lane = Var("lane", I64)
    n, steps = Var("n", I64), Var("steps", I64)
    body = (
        Let("lane", I64, I + Var("base", I64)),
        Let("n", I64, lane + 1),
        Let("steps", I64, zero()),
        While(n.ne(1), (
            If((n % 2).eq(0), (Assign("n", n / 2),), (Assign("n", n * 3 + 1),)),
            Assign("steps", steps + 1),
            If(steps.gt(lane), (Store("out", (lane,), -steps), Return())),
        )),
        Store("out", (lane,), steps * 10 + Call("sign", (lane % 5 - 2,), I64)),
    )
    params = (Parameter("base", I64), out_param())
    together = kernel_run(body, params, {"base": 0, "out": np.zeros(25, np.int64)}, (25,),
                          helpers=(SIGN,))["out"]
    one_by_one = np.zeros(25, np.int64)
    for base in range(25):
        one_by_one = kernel_run(body, params, {"base": base, "out": one_by_one}, (1,),
                                helpers=(SIGN,))["out"]
    np.testing.assert_array_equal(together, one_by_one)
    assert (together < 0).any() and (together > 0).any()
