"""Buffers, arrays, atomics, replication and their errors."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir import (
    F32, I32, I64, U32, ArrayDecl, Assign, AtomicUpdate, Barrier, BufferType, Const, For,
    If, InstanceCount, InstanceId, KernelFunction, Let, Load, Parameter, Return, Store, Var,
)
from hpvm.ir.graph import Module
from hpvm.interp import run_kernel, run_module
from hpvm.interp.testing import kernel_module

I, J, K = InstanceId(0), InstanceId(1), InstanceId(2)


def kernel_run(body, params, args, replication):
    function = KernelFunction("k", tuple(params), tuple(body))
    return run_kernel(Module("m", {"k": function}, {}, "main"), "k", args, replication)


def buffer(name, t, dims, direction="in"):
    return Parameter(name, BufferType(t, dims), direction)


def test_replication_in_three_dimensions_gives_instance_ids_and_counts():
    value = ((I * 10 + J) * 10 + K) + InstanceCount(0) * 1000 + InstanceCount(2) * 10000
    body = (Store("out", (I, J, K), value),)
    out = kernel_run(body, (buffer("out", I64, (2, 3, 4), "out"),),
                     {"out": np.zeros((2, 3, 4), np.int64)}, (2, 3, 4))["out"]
    i, j, k = np.indices((2, 3, 4))
    np.testing.assert_array_equal(out, i * 100 + j * 10 + k + 2000 + 40000)


def test_replication_in_two_dimensions_with_flat_indexing():
    body = (Store("out", (I * InstanceCount(1) + J,), I - J),)
    out = kernel_run(body, (buffer("out", I64, (3, 5), "out"),),
                     {"out": np.zeros((3, 5), np.int64)}, (3, 5))["out"]
    i, j = np.indices((3, 5))
    np.testing.assert_array_equal(out, i - j)


def test_unreplicated_kernel_runs_one_instance():
    body = (Store("out", (I,), InstanceCount(0) + 41),)
    out = kernel_run(body, (buffer("out", I64, (1,), "out"),),
                     {"out": np.zeros(1, np.int64)}, ())["out"]
    assert out[0] == 42


def test_instance_id_beyond_the_replication_rank_is_an_error():
    body = (Store("out", (J,), Const(1, I64)),)
    with pytest.raises(ExecutionError, match=r"instance_id\(1\).*1 dimension"):
        kernel_run(body, (buffer("out", I64, (4,), "out"),), {"out": np.zeros(4, np.int64)},
                   (4,))


def test_out_of_range_load_names_function_buffer_index_and_bounds():
    body = (Store("out", (I,), Load("a", (I + 1,), F32)),)
    params = (buffer("a", F32, ("N",)), buffer("out", F32, ("N",), "out"))
    with pytest.raises(ExecutionError) as error:
        kernel_run(body, params, {"a": np.zeros(4, np.float32)}, (4,))
    text = str(error.value)
    assert "function '@k'" in text and "load of 'a' at index 4" in text
    assert "bounds 0..3" in text and "instance (3,)" in text


def test_out_of_range_store_with_two_indices_shows_the_shape():
    body = (Store("out", (I, J + 2), Const(1.0, F32)),)
    params = (buffer("out", F32, (3, 4), "out"),)
    with pytest.raises(ExecutionError, match=r"store of 'out' at index \(0, 4\).*\[3, 4\]"):
        kernel_run(body, params, {}, (3, 3))


def test_negative_index_is_out_of_range():
    body = (Store("out", (I - 1,), Const(1.0, F32)),)
    with pytest.raises(ExecutionError, match="index -1 is out of range"):
        kernel_run(body, (buffer("out", F32, (4,), "out"),), {}, (4,))


def test_masked_off_instances_do_not_fault():
    body = (If(I.lt(Var("N", I64)), (Store("out", (I,), Load("a", (I,), F32) * 2),)),)
    params = (buffer("a", F32, ("N",)), buffer("out", F32, ("M",), "out"))
    out = kernel_run(body, params, {"a": np.arange(3, dtype=np.float32),
                                    "out": np.zeros(5, np.float32)}, (5,))["out"]
    np.testing.assert_array_equal(out, [0, 2, 4, 0, 0])


def test_store_to_an_in_buffer_is_an_error():
    body = (Store("a", (I,), Const(1.0, F32)),)
    with pytest.raises(ExecutionError, match="'a', an 'in' parameter"):
        kernel_run(body, (buffer("a", F32, ("N",)),), {"a": np.zeros(2, np.float32)}, (2,))


def test_private_arrays_are_one_per_instance_and_zero_initialised():
    body = (
        ArrayDecl("p", I64, (4,)),
        For("t", Const(1, I64), Const(4, I64), 1, (
            Store("p", (Var("t", I64),), Load("p", (Var("t", I64) - 1,), I64) + I),)),
        Store("out", (I,), Load("p", (Const(3, I64),), I64) + Load("p", (Const(0, I64),), I64)),
    )
    out = kernel_run(body, (buffer("out", I64, ("N",), "out"),),
                     {"out": np.zeros(5, np.int64)}, (5,))["out"]
    np.testing.assert_array_equal(out, 3 * np.arange(5))


def test_private_parameter_gives_each_instance_its_own_copy():
    body = (
        Store("scratch", (Const(0, I64),), Load("scratch", (Const(0, I64),), I64) + I),
        Store("out", (I,), Load("scratch", (Const(0, I64),), I64)),
    )
    params = (buffer("scratch", I64, (1,), "private"), buffer("out", I64, ("N",), "out"))
    result = kernel_run(body, params, {"scratch": np.array([100], np.int64),
                                       "out": np.zeros(4, np.int64)}, (4,))
    np.testing.assert_array_equal(result["out"], [100, 101, 102, 103])
    np.testing.assert_array_equal(result["scratch"], [100])


def group_reverse_module():
    """Within each work group of 4, out[i] = a[mirror of i]: needs the
    local array and the barrier."""
    lid = I % 4
    function = KernelFunction(
        "reverse", (buffer("a", F32, ("N",)), buffer("out", F32, ("N",), "out")),
        (ArrayDecl("tile", F32, (4,), "local"),
         Store("tile", (lid,), Load("a", (I,), F32)),
         Barrier(),
         Store("out", (I,), Load("tile", (Const(3, I64) - lid,), F32))))
    return kernel_module(function, (Var("N", I64),), attributes={"group": (4,)})


def test_local_arrays_are_shared_by_a_work_group_across_a_barrier():
    a = np.arange(12, dtype=np.float32)
    out = run_module(group_reverse_module(), {"a": a})["out"]
    np.testing.assert_array_equal(out, a.reshape(3, 4)[:, ::-1].reshape(-1))


def test_local_array_sum_per_work_group():
    lid = I % 4
    body = (
        ArrayDecl("partial", F32, (4,), "local"),
        Store("partial", (lid,), Load("a", (I,), F32)),
        Barrier(),
        If(lid.eq(0), (
            Let("sum", F32, Const(0.0, F32)),
            For("t", Const(0, I64), Const(4, I64), 1, (
                Assign("sum", Var("sum", F32) + Load("partial", (Var("t", I64),), F32)),)),
            Store("out", (I / 4,), Var("sum", F32)))),
    )
    function = KernelFunction("group_sum", (buffer("a", F32, ("N",)),
                                            buffer("out", F32, ("G",), "inout")), body)
    module = kernel_module(function, (Var("N", I64),), attributes={"group": (4,)})
    a = np.arange(16, dtype=np.float32)
    out = run_module(module, {"a": a, "out": np.zeros(4, np.float32)})["out"]
    np.testing.assert_array_equal(out, a.reshape(4, 4).sum(axis=1))


def test_barrier_in_divergent_control_flow_is_an_error():
    body = (If((I % 2).eq(0), (Barrier(),)),)
    with pytest.raises(ExecutionError, match="barrier reached by only some instances"):
        kernel_run(body, (), {}, (4,))


def test_barrier_under_uniform_control_flow_is_fine():
    body = (If(InstanceCount(0).gt(1), (Barrier(),)), Store("out", (I,), I))
    out = kernel_run(body, (buffer("out", I64, ("N",), "out"),),
                     {"out": np.zeros(3, np.int64)}, (3,))["out"]
    np.testing.assert_array_equal(out, [0, 1, 2])


def test_barrier_after_an_early_return_is_an_error():
    body = (If(I.eq(0), (Return(),)), Barrier())
    with pytest.raises(ExecutionError, match="barrier"):
        kernel_run(body, (), {}, (2,))


def test_atomic_add_builds_a_histogram():
    values = np.random.default_rng(1).integers(0, 8, 1000).astype(np.int32)
    body = (AtomicUpdate("add", "bins", (Load("values", (I,), I32),), Const(1, U32)),)
    params = (buffer("values", I32, ("N",)), buffer("bins", U32, (8,), "inout"))
    bins = kernel_run(body, params, {"values": values, "bins": np.zeros(8, np.uint32)},
                      (1000,))["bins"]
    np.testing.assert_array_equal(bins, np.bincount(values, minlength=8))


def test_atomic_add_result_gives_every_instance_a_distinct_ticket():
    body = (
        Let("ticket", I64, None),
        AtomicUpdate("add", "counter", (Const(0, I64),), Const(1, I64), result="ticket"),
        Store("out", (I,), Var("ticket", I64)),
    )
    params = (buffer("counter", I64, (1,), "inout"), buffer("out", I64, ("N",), "out"))
    result = kernel_run(body, params, {"counter": np.array([10], np.int64),
                                       "out": np.zeros(50, np.int64)}, (50,))
    assert sorted(result["out"]) == list(range(10, 60))
    assert result["counter"][0] == 60


@pytest.mark.parametrize("op, reduce", [("min", np.min), ("max", np.max)])
def test_atomic_min_and_max(op, reduce):
    values = np.random.default_rng(2).normal(size=100).astype(np.float32)
    body = (AtomicUpdate(op, "best", (Const(0, I64),), Load("values", (I,), F32)),)
    params = (buffer("values", F32, ("N",)), buffer("best", F32, (1,), "inout"))
    best = kernel_run(body, params, {"values": values, "best": np.zeros(1, np.float32)},
                      (100,))["best"]
    assert best[0] == reduce(np.append(values, 0))


def test_atomic_max_result_sees_the_values_before_each_update():
    body = (
        Let("old", I32, None),
        AtomicUpdate("max", "best", (I % 2,), Load("values", (I,), I32), result="old"),
        Store("out", (I,), Var("old", I32)),
    )
    params = (buffer("values", I32, ("N",)), buffer("best", I32, (2,), "inout"),
              buffer("out", I32, ("N",), "out"))
    values = np.array([3, 7, 1, 9, 5, 2], np.int32)
    result = kernel_run(body, params, {"values": values, "best": np.zeros(2, np.int32),
                                       "out": np.zeros(6, np.int32)}, (6,))
    np.testing.assert_array_equal(result["best"], [5, 9])
    np.testing.assert_array_equal(result["out"], [0, 0, 3, 7, 3, 9])


def test_colliding_stores_keep_the_highest_instance_value():
    body = (Store("out", (Const(0, I64),), I),
            If((I % 2).eq(0), (Store("out", (Const(1, I64),), I),)))
    out = kernel_run(body, (buffer("out", I64, (2,), "out"),), {}, (5,))["out"]
    np.testing.assert_array_equal(out, [4, 4])


def test_atomic_result_under_divergent_control_flow_updates_active_instances_only():
    body = (
        Let("old", I64, Const(-1, I64)),
        If((I % 2).eq(1), (AtomicUpdate("add", "counter", (Const(0, I64),), I, result="old"),)),
        Store("out", (I,), Var("old", I64)),
    )
    params = (buffer("counter", I64, (1,), "inout"), buffer("out", I64, ("N",), "out"))
    result = kernel_run(body, params, {"counter": np.zeros(1, np.int64),
                                       "out": np.zeros(6, np.int64)}, (6,))
    assert result["counter"][0] == 1 + 3 + 5
    np.testing.assert_array_equal(result["out"][::2], [-1, -1, -1])
    assert sorted(result["out"][1::2]) == [0, 1, 4]


def test_buffer_of_the_wrong_element_type_reaching_a_kernel_is_an_error():
    body = (Store("out", (I,), Load("a", (I,), F32)),)
    params = (buffer("a", F32, ("N",)), buffer("out", F32, ("N",), "out"))
    function = KernelFunction("k", params, body)
    from hpvm.interp.kernel_launch import launch_kernel
    with pytest.raises(ExecutionError, match="parameter 'a': expects elements of type f32"):
        launch_kernel(Module("m", {"k": function}, {}, "main"), function,
                      {"a": np.zeros(2, np.int32), "out": np.zeros(2, np.float32)}, (2,))


def test_private_parameter_read_only_by_the_kernel_is_shared_not_copied():
    body = (Store("out", (I,), Load("table", (I % 2,), I64)),)
    params = (buffer("table", I64, (2,), "private"), buffer("out", I64, ("N",), "out"))
    out = kernel_run(body, params, {"table": np.array([5, 6], np.int64),
                                    "out": np.zeros(4, np.int64)}, (4,))["out"]
    np.testing.assert_array_equal(out, [5, 6, 5, 6])
