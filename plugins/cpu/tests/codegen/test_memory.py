"""Buffers, arrays and atomics in code made by the cpu code generator."""
import numpy as np
import pytest

from hpvm.ir.kernel import (
    ArrayDecl, Assign, AtomicUpdate, Const, For, InstanceCount, InstanceId,
    Intrinsic, KernelFunction, Let, Load, Store, Var,
)
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import F16, F32, F64, I32, I64, U8, U32, BufferType
from hpvm_cpu.codegen import compile_kernel_node
from hpvm_cpu.codegen.testing import (
    assert_matches_reference, assert_same, module_of, run_cpu,
)

RNG = np.random.default_rng(3)
i, j, k = InstanceId(0), InstanceId(1), InstanceId(2)


def run_checked(module, function, args, replication, **kw):
    result = run_cpu(module, function, args, replication, **kw)
    assert_matches_reference(module, function, args, replication, result)
    return result


def test_private_array_is_zeroed_for_every_instance():
    kernel = KernelFunction("priv", (Parameter("out", BufferType(I64, ("N",)), "out"),), (
        ArrayDecl("tmp", I64, (4,)),
        Store("tmp", (i % 4,), Load("tmp", (i % 4,), I64) + i),
        Let("total", I64, Const(0, I64)),
        For("q", Const(0, I64), Const(4, I64), 1,
            (Assign("total", Var("total", I64) + Load("tmp", (Var("q", I64),), I64)),)),
        Store("out", (i,), Var("total", I64)),
    ))
    result = run_checked(module_of(kernel), "priv", {"out": np.zeros(9, np.int64)}, (9,))
    assert_same(result["out"], np.arange(9))


def test_an_array_left_undefined_is_not_zero_filled():
    """``zeroed=False`` (``= undef``): a kernel that writes before it reads
    gets its results without the memset a zeroed array costs."""
    def kernel(zeroed: bool):
        return KernelFunction("scratch", (Parameter("out", BufferType(F32, ("N",)), "out"),), (
            ArrayDecl("tmp", F32, (4096,), zeroed=zeroed),
            For("q", Const(0, I64), Const(4096, I64), 1,
                (Store("tmp", (Var("q", I64),), (Var("q", I64) + i).cast(F32)),)),
            Store("out", (i,), Load("tmp", (Const(7, I64),), F32)),
        ))
    for zeroed in (True, False):
        function = kernel(zeroed)
        compiled = compile_kernel_node(module_of(function), "scratch", 1)
        assert ("llvm.memset" in compiled.llvm_ir) == zeroed
        result = run_checked(module_of(function), "scratch", {"out": np.zeros(5, np.float32)},
                             (5,))
        assert_same(result["out"], np.arange(7, 12, dtype=np.float32))


def test_two_dimensional_private_array():
    kernel = KernelFunction("grid", (Parameter("out", BufferType(I32, ("N",)), "out"),), (
        ArrayDecl("g", I32, (3, 5)),
        For("r", Const(0, I64), Const(3, I64), 1, (
            For("c", Const(0, I64), Const(5, I64), 1, (
                Store("g", (Var("r", I64), Var("c", I64)),
                      (Var("r", I64) * 10 + Var("c", I64) + i).cast(I32)),)),)),
        Store("out", (i,), Load("g", (Const(2, I64), Const(4, I64)), I32)),
    ))
    result = run_checked(module_of(kernel), "grid", {"out": np.zeros(6, np.int32)}, (6,))
    assert_same(result["out"], (24 + np.arange(6)).astype(np.int32))


def test_local_array_is_shared_within_a_single_chunk():
    kernel = KernelFunction("shared", (Parameter("out", BufferType(I64, ("N",)), "out"),), (
        ArrayDecl("acc", I64, (1,), space="local"),
        Store("acc", (Const(0, I64),), Load("acc", (Const(0, I64),), I64) + 1),
        Store("out", (i,), Load("acc", (Const(0, I64),), I64)),
    ))
    result = run_cpu(module_of(kernel), "shared", {"out": np.zeros(5, np.int64)}, (5,), threads=1)
    assert_same(result["out"], np.arange(1, 6))


def test_private_buffer_gives_each_instance_its_own_copy():
    buffer = BufferType(I64, ("M",))
    kernel = KernelFunction("own", (Parameter("scratch", buffer, "private"),
                                    Parameter("out", BufferType(I64, ("N",)), "out")), (
        Store("scratch", (Const(0, I64),), Load("scratch", (Const(0, I64),), I64) + i),
        Store("out", (i,), Load("scratch", (Const(0, I64),), I64)),
    ))
    scratch = np.array([100, 0, 0], np.int64)
    for threads in (1, 2):
        result = run_checked(module_of(kernel), "own",
                             {"scratch": scratch, "out": np.zeros(7, np.int64)}, (7,),
                             threads=threads)
        assert_same(result["out"], 100 + np.arange(7))
        assert_same(result["scratch"], scratch)


def histogram_kernel(element):
    return KernelFunction("histogram", (
        Parameter("data", BufferType(U8, ("N",))),
        Parameter("bins", BufferType(element, (16,)), "inout")), (
        AtomicUpdate("add", "bins", (Load("data", (i,), U8).cast(I64) % 16,),
                     Const(1, element)),))


@pytest.mark.parametrize("element", [I32, U32, I64, F32, F64], ids=str)
def test_atomic_histogram_on_two_threads_is_exact(element):
    data = RNG.integers(0, 256, 200_000).astype(np.uint8)
    bins = np.zeros(16, element.numpy_dtype)
    result = run_cpu(module_of(histogram_kernel(element)), "histogram",
                     {"data": data, "bins": bins}, (data.size,), threads=2)
    expected = np.bincount(data % 16, minlength=16).astype(element.numpy_dtype)
    assert_same(result["bins"], expected)
    small = {"data": data[:500], "bins": bins}
    assert_matches_reference(module_of(histogram_kernel(element)), "histogram", small, (500,),
                             run_cpu(module_of(histogram_kernel(element)), "histogram", small,
                                     (500,)))


@pytest.mark.parametrize("op,element", [("min", I32), ("max", I32), ("min", U32),
                                        ("max", U32), ("min", F32), ("max", F64)])
def test_atomic_min_max_with_old_value(op, element):
    values = (RNG.normal(size=1000) * 1000).astype(element.numpy_dtype)
    kernel = KernelFunction("reduce", (
        Parameter("v", BufferType(element, ("N",))),
        Parameter("best", BufferType(element, (1,)), "inout"),
        Parameter("old", BufferType(element, ("N",)), "out")), (
        Let("previous", element, None),
        AtomicUpdate(op, "best", (Const(0, I64),), Load("v", (i,), element), "previous"),
        Store("old", (i,), Var("previous", element)),
    ))
    start = np.array([values[0]], element.numpy_dtype)
    result = run_cpu(module_of(kernel), "reduce", {"v": values, "best": start}, (1000,),
                     threads=2)
    reduce = np.min if op == "min" else np.max
    assert result["best"][0] == reduce(values)
    assert np.all(np.isin(result["old"], values))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_replication_in_one_to_three_dimensions(rank):
    shape = (5, 4, 3)[:rank]
    ids = (i, j, k)[:rank]
    linear = Const(0, I64)
    for d in range(rank):
        linear = linear * InstanceCount(d) + ids[d]
    kernel = KernelFunction("ids", (Parameter("out", BufferType(I64, ("A", "B", "C")[:rank]),
                                              "out"),), (Store("out", ids, linear),))
    for threads in (1, 2, 3):
        result = run_checked(module_of(kernel), "ids", {"out": np.zeros(shape, np.int64)}, shape,
                             threads=threads)
        assert_same(result["out"], np.arange(np.prod(shape)).reshape(shape))


def matmul_kernel(element, accumulate):
    a, b, c = (BufferType(element, dims) for dims in (("M", "K"), ("K", "N"), ("M", "N")))
    kk = Var("kk", I64)
    return KernelFunction("matmul", (
        Parameter("a", a, restrict=True), Parameter("b", b, restrict=True),
        Parameter("c", c, "out", restrict=True)), (
        Let("acc", accumulate, Const(0.0, accumulate)),
        For("kk", Const(0, I64), Var("K", I64), 1, (
            Assign("acc", Var("acc", accumulate)
                   + Load("a", (i, kk), element).cast(accumulate)
                   * Load("b", (kk, j), element).cast(accumulate)),)),
        Store("c", (i, j), Var("acc", accumulate).cast(element)),
    ))


@pytest.mark.parametrize("element,tolerance", [(F32, 1e-5), (F64, 1e-12)], ids=str)
def test_matmul_64(element, tolerance):
    a = RNG.normal(size=(64, 64)).astype(element.numpy_dtype)
    b = RNG.normal(size=(64, 64)).astype(element.numpy_dtype)
    module = module_of(matmul_kernel(element, element))
    result = run_cpu(module, "matmul", {"a": a, "b": b}, (64, 64))
    assert_same(result["c"], a @ b, rtol=tolerance, atol=tolerance)
    assert_matches_reference(module, "matmul", {"a": a, "b": b}, (64, 64), result,
                             rtol=tolerance, atol=tolerance)


def test_f16_matmul_accumulating_in_f32():
    a = RNG.normal(size=(16, 24)).astype(np.float16)
    b = RNG.normal(size=(24, 8)).astype(np.float16)
    module = module_of(matmul_kernel(F16, F32))
    result = run_checked(module, "matmul", {"a": a, "b": b}, (16, 8))
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert_same(result["c"], expected, rtol=1e-3, atol=1e-3)


def test_chunked_runs_equal_the_single_threaded_run():
    a = RNG.normal(size=(37, 29)).astype(np.float32)
    b = RNG.normal(size=(29, 41)).astype(np.float32)
    module = module_of(matmul_kernel(F32, F32))
    single = run_cpu(module, "matmul", {"a": a, "b": b}, (37, 41), threads=1)["c"]
    for threads in (2, 3, 8, 64):
        chunked = run_cpu(module, "matmul", {"a": a, "b": b}, (37, 41), threads=threads)["c"]
        assert_same(chunked, single)


def test_u8_image_kernel_saturates_with_min():
    image = RNG.integers(0, 256, (12, 10)).astype(np.uint8)
    kernel = KernelFunction("brighten", (
        Parameter("img", BufferType(U8, ("H", "W"))),
        Parameter("gain", I32),
        Parameter("out", BufferType(U8, ("H", "W")), "out")), (
        Let("v", I32, Load("img", (i, j), U8).cast(I32) * Var("gain", I32)),
        Store("out", (i, j), Intrinsic("min", (Var("v", I32), Const(255, I32))).cast(U8)),
    ))
    result = run_checked(module_of(kernel), "brighten", {"img": image, "gain": 3}, (12, 10))
    assert_same(result["out"], np.minimum(image.astype(np.int32) * 3, 255).astype(np.uint8))


def test_flat_index_into_a_shaped_buffer():
    kernel = KernelFunction("flat", (Parameter("x", BufferType(I32, ("H", "W")), "inout"),), (
        Store("x", (i,), Load("x", (i,), I32) * 2),))
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    result = run_checked(module_of(kernel), "flat", {"x": x}, (12,))
    assert_same(result["x"], x * 2)


def test_scalar_parameter_named_like_a_shape_symbol_gives_its_value():
    kernel = KernelFunction("size", (Parameter("x", BufferType(I64, ("N",)), "inout"),
                                     Parameter("N", I32)), (
        Store("x", (i,), Var("N", I32).cast(I64) * 100 + InstanceCount(0)),))
    result = run_checked(module_of(kernel), "size", {"x": np.zeros(6, np.int64), "N": 6}, (6,))
    assert_same(result["x"], np.full(6, 606, np.int64))


def test_atomic_add_on_f16():
    data = np.arange(64).astype(np.uint8)
    result = run_checked(module_of(histogram_kernel(F16)), "histogram",
                         {"data": data, "bins": np.zeros(16, np.float16)}, (64,), threads=2)
    assert_same(result["bins"], np.full(16, 4, np.float16))


def test_kernels_compile_concurrently_from_many_threads():
    from concurrent.futures import ThreadPoolExecutor
    modules = [module_of(matmul_kernel(F32, F32))] * 2 + [module_of(histogram_kernel(I32))] * 2
    names = ["matmul", "matmul", "histogram", "histogram"]
    with ThreadPoolExecutor(4) as pool:
        kernels = list(pool.map(lambda pair: compile_kernel_node(*pair, 2 if pair[1] == "matmul"
                                                                 else 1), zip(modules, names)))
    assert kernels[0] is kernels[1] and kernels[2] is kernels[3]


def test_rank_zero_buffer_holds_one_element():
    kernel = KernelFunction("scalar_buffer", (
        Parameter("total", BufferType(I64, ()), "inout"),
        Parameter("x", BufferType(I64, ("N",)))), (
        AtomicUpdate("add", "total", (), Load("x", (i,), I64)),))
    x = np.arange(10, dtype=np.int64)
    # Not compared with the interpreter: it fails on rank-0 atomics (reported).
    result = run_cpu(module_of(kernel), "scalar_buffer",
                     {"total": np.array(5, np.int64), "x": x}, (10,), threads=2)
    assert_same(result["total"], np.array(50, np.int64))


def test_rank_zero_buffer_load_and_store():
    kernel = KernelFunction("double", (Parameter("v", BufferType(F64, ()), "inout"),), (
        Store("v", (), Load("v", (), F64) * 2.0),))
    result = run_checked(module_of(kernel), "double", {"v": np.array(1.5)}, ())
    assert_same(result["v"], np.array(3.0))
