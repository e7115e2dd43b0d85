"""Control flow compiled by the cpu code generator: loops, while, if,
return, short-circuit logic, helper calls."""
import numpy as np
import pytest

from hpvm.ir.kernel import (
    Assign, AtomicUpdate, Binary, Call, Const, ExprStmt, For, If, InstanceId,
    KernelFunction, Let, Load, Return, Store, Var, While,
)
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import BOOL, F32, I32, I64, BufferType
from hpvm_cpu.codegen.testing import (
    assert_matches_reference, assert_same, module_of, run_cpu,
)

i = InstanceId(0)
N_BUFFER = BufferType(I64, ("N",))


def run_checked(module, function, args, replication, **kw):
    result = run_cpu(module, function, args, replication, **kw)
    assert_matches_reference(module, function, args, replication, result)
    return result


def out_kernel(name, body, extra_params=()):
    """A kernel with ``out: i64[N]`` plus ``extra_params``."""
    return KernelFunction(name, (Parameter("out", N_BUFFER, "out"),) + tuple(extra_params), body)


def sum_loop(start, stop, step):
    """out[i] = sum of the loop variable over the loop."""
    return out_kernel("loop", (
        Let("acc", I64, Const(0, I64)),
        For("k", start, stop, step, (Assign("acc", Var("acc", I64) + Var("k", I64)),)),
        Store("out", (i,), Var("acc", I64)),
    ))


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (3, 20, 4), (10, 0, -1),
                                             (9, -5, -3), (5, 5, 1), (5, 0, 1)])
def test_for_loop_with_constant_bounds(start, stop, step):
    kernel = sum_loop(Const(start, I64), Const(stop, I64), step)
    result = run_checked(module_of(kernel), "loop", {"out": np.zeros(3, np.int64)}, (3,))
    assert_same(result["out"], np.full(3, sum(range(start, stop, step)), np.int64))


def test_for_loop_bounds_depend_on_the_instance():
    kernel = sum_loop(Const(0, I64), i, 1)
    result = run_checked(module_of(kernel), "loop", {"out": np.zeros(20, np.int64)}, (20,))
    assert_same(result["out"], np.array([n * (n - 1) // 2 for n in range(20)]))


def test_for_loop_stop_is_evaluated_every_iteration():
    body = (
        Let("limit", I64, Const(10, I64)),
        Let("count", I64, Const(0, I64)),
        For("k", Const(0, I64), Var("limit", I64), 1, (
            Assign("limit", Var("limit", I64) - 1),
            Assign("count", Var("count", I64) + 1),
        )),
        Store("out", (i,), Var("count", I64)),
    )
    result = run_checked(module_of(out_kernel("shrink", body)), "shrink",
                         {"out": np.zeros(2, np.int64)}, (2,))
    assert_same(result["out"], np.full(2, 5, np.int64))


def test_loop_attributes_do_not_change_results():
    body = (
        Let("acc", I64, Const(0, I64)),
        For("k", Const(0, I64), Const(100, I64), 1,
            (Assign("acc", Var("acc", I64) + Var("k", I64) * i),), unroll=4, trip_count=100),
        For("k", Const(0, I64), Const(7, I64), 1,
            (Assign("acc", Var("acc", I64) + 1),), unroll=1),
        Store("out", (i,), Var("acc", I64)),
    )
    result = run_checked(module_of(out_kernel("attrs", body)), "attrs",
                         {"out": np.zeros(8, np.int64)}, (8,))
    assert_same(result["out"], np.arange(8) * 4950 + 7)


def test_ivdep_loop_scales_a_row():
    row = BufferType(F32, ("N", "M"))
    kernel = KernelFunction("scale", (Parameter("x", row, "inout"),), (
        For("j", Const(0, I64), Var("M", I64), 1,
            (Store("x", (i, Var("j", I64)), Load("x", (i, Var("j", I64)), F32) * 2.0),),
            ivdep=True),
    ))
    x = np.random.default_rng(1).normal(size=(4, 37)).astype(np.float32)
    result = run_checked(module_of(kernel), "scale", {"x": x}, (4,))
    assert_same(result["x"], x * 2)


def test_while_loop_counts_collatz_steps():
    n = Var("n", I64)
    body = (
        Let("n", I64, i + 1),
        Let("steps", I64, Const(0, I64)),
        While(n.ne(1), (
            If((n % 2).eq(0), (Assign("n", n / 2),), (Assign("n", n * 3 + 1),)),
            Assign("steps", Var("steps", I64) + 1),
        )),
        Store("out", (i,), Var("steps", I64)),
    )
    result = run_checked(module_of(out_kernel("collatz", body)), "collatz",
                         {"out": np.zeros(30, np.int64)}, (30,))

    def steps(value):
        count = 0
        while value != 1:
            value = value // 2 if value % 2 == 0 else 3 * value + 1
            count += 1
        return count

    assert_same(result["out"], np.array([steps(v + 1) for v in range(30)]))


def test_divergent_if_and_early_return():
    body = (
        Store("out", (i,), Const(1, I64)),
        If((i % 3).eq(0), (Return(),)),
        If(i.lt(10), (Store("out", (i,), Const(2, I64)),),
           (Store("out", (i,), Const(3, I64)), Return())),
        Store("out", (i,), Load("out", (i,), I64) * 10),
    )
    result = run_checked(module_of(out_kernel("branchy", body)), "branchy",
                         {"out": np.zeros(16, np.int64)}, (16,))
    expected = [1 if n % 3 == 0 else (20 if n < 10 else 3) for n in range(16)]
    assert_same(result["out"], np.array(expected))


def test_return_inside_a_loop_ends_the_instance():
    body = (
        For("k", Const(0, I64), Const(100, I64), 1, (
            If(Var("k", I64).eq(i), (Store("out", (i,), Var("k", I64) * 7), Return())),
        )),
        Store("out", (i,), Const(-1, I64)),
    )
    result = run_checked(module_of(out_kernel("find", body)), "find",
                         {"out": np.zeros(5, np.int64)}, (5,))
    assert_same(result["out"], np.arange(5) * 7)


def counting_predicate():
    """A helper returning ``flag[0] != 0`` that counts its calls."""
    return KernelFunction(
        "pred", (Parameter("calls", BufferType(I32, (1,)), "inout"),
                 Parameter("flag", BufferType(BOOL, (1,)))),
        (AtomicUpdate("add", "calls", (Const(0, I64),), Const(1, I32)),
         Return(Load("flag", (Const(0, I64),), BOOL))),
        return_type=BOOL)


@pytest.mark.parametrize("op", ["land", "lor"])
@pytest.mark.parametrize("left", [False, True])
def test_logical_operators_short_circuit(op, left):
    call = Call("pred", (Var("calls", BufferType(I32, (1,))), Var("flag", BufferType(BOOL, (1,)))),
                BOOL)
    kernel = KernelFunction("logic", (
        Parameter("calls", BufferType(I32, (1,)), "inout"),
        Parameter("flag", BufferType(BOOL, (1,))),
        Parameter("left", BufferType(BOOL, (1,))),
        Parameter("out", BufferType(BOOL, (1,)), "out"),
    ), (Store("out", (Const(0, I64),), Binary(op, Load("left", (Const(0, I64),), BOOL), call)),))
    module = module_of(kernel, counting_predicate())
    args = {"calls": np.zeros(1, np.int32), "flag": np.array([True]),
            "left": np.array([left]), "out": np.zeros(1, bool)}
    result = run_checked(module, "logic", args, (1,))
    decided = (op == "land" and not left) or (op == "lor" and left)
    assert result["calls"][0] == (0 if decided else 1)
    assert result["out"][0] == (left and True if op == "land" else left or True)


def test_helper_functions_take_buffers_and_scalars():
    square = KernelFunction("square", (Parameter("v", F32),), (Return(Var("v", F32) * Var("v", F32)),),
                            return_type=F32)
    add_to = KernelFunction("add_to", (
        Parameter("buf", BufferType(F32, ("N",)), "inout"),
        Parameter("at", I64), Parameter("v", F32)),
        (Store("buf", (Var("at", I64),), Load("buf", (Var("at", I64),), F32) + Var("v", F32)),))
    kernel = KernelFunction("main", (Parameter("x", BufferType(F32, ("N",)), "inout"),), (
        ExprStmt(Call("add_to", (Var("x", BufferType(F32, ("N",))), i,
                                 Call("square", (Load("x", (i,), F32),), F32)), None)),
    ))
    x = np.arange(10, dtype=np.float32)
    result = run_checked(module_of(kernel, square, add_to), "main", {"x": x}, (10,))
    assert_same(result["x"], x + x * x)


def test_helper_reads_the_instance_id_of_its_caller():
    where = KernelFunction("where", (), (Return(InstanceId(0) * 2 + InstanceId(1)),),
                           return_type=I64)
    kernel = KernelFunction("main", (Parameter("out", BufferType(I64, ("A", "B")), "out"),), (
        Store("out", (InstanceId(0), InstanceId(1)), Call("where", (), I64)),))
    result = run_checked(module_of(kernel, where), "main", {"out": np.zeros((3, 4), np.int64)},
                         (3, 4))
    rows, cols = np.indices((3, 4))
    assert_same(result["out"], rows * 2 + cols)
