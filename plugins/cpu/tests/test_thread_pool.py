"""The native fork-join pool (codegen/thread_pool.py): every chunk of every
launch runs exactly once, also with launches back to back, from several
threads at once, and in a forked child."""
import multiprocessing
import threading

import numpy as np
import pytest

from hpvm.ir.kernel import InstanceId, KernelFunction, Load, Store, Var
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import F64, I64, BufferType
from hpvm_cpu.codegen.compiler import compile_kernel_node
from hpvm_cpu.codegen.testing import module_of
from hpvm_cpu.codegen.thread_pool import ThreadPool, split_range, thread_pool

N = 5000
REPLICATION = (Var("N", I64),)


@pytest.fixture(scope="module")
def bump():
    """x[i] += 1, compiled to split into 16 chunks or more whatever the cores."""
    i = InstanceId(0)
    function = KernelFunction("bump", (Parameter("x", BufferType(F64, ("N",)), "inout"),),
                              (Store("x", (i,), Load("x", (i,), F64) + 1.0),))
    kernel = compile_kernel_node(module_of(function), "bump", 1, {"threads": 16})
    kernel._per_chunk = 1  # chunk even this small kernel
    return kernel


def test_back_to_back_launches_run_each_chunk_once(bump):
    x = np.zeros(N)
    launch = bump.bind({"x": x}, REPLICATION)
    for _ in range(500):
        launch({})
    np.testing.assert_array_equal(x, 500.0)


def test_launches_from_several_threads_each_complete(bump):
    arrays = [np.zeros(N) for _ in range(4)]

    def work(x):
        launch = bump.bind({"x": x}, REPLICATION)
        for _ in range(200):
            launch({})
    threads = [threading.Thread(target=work, args=(x,)) for x in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    for x in arrays:
        np.testing.assert_array_equal(x, 200.0)


def _bump_in_child(kernel_args, queue):
    x = np.zeros(N)
    kernel_args.bind({"x": x}, REPLICATION)({})
    queue.put(float(x.sum()))


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_a_forked_child_makes_its_own_pool(bump):
    bump.bind({"x": np.zeros(N)}, REPLICATION)({})  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_bump_in_child, args=(bump, queue))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == N


def test_a_pool_without_workers_runs_everything_in_the_caller(bump):
    pool = ThreadPool(0)
    x = np.zeros(N)
    chunks = bump._calls(bump._packer.pack({"x": x}, (N,)), (N,), 16)
    pool.run(bump._address, chunks.table)
    np.testing.assert_array_equal(x, 1.0)
    pool.stop()


@pytest.mark.parametrize("chunks", [1, 3, 4, 7, 64, 313])
def test_home_ranges_and_stealing_run_every_chunk_once(bump, chunks):
    """Four participants own a quarter of the chunks each (some none)."""
    pool = ThreadPool(3)
    x = np.zeros(N)
    calls = bump._calls(bump._packer.pack({"x": x}, (N,)), (N,), chunks)
    for _ in range(50):
        pool.run(bump._address, calls.table)
    np.testing.assert_array_equal(x, 50.0)
    pool.stop()


def test_a_stopped_pool_lets_its_workers_end():
    pool = ThreadPool(3)
    pool.stop()
    assert not any(t.is_alive() for t in pool.workers)
    assert thread_pool() is not pool


@pytest.mark.parametrize("workers", [0, 3])
@pytest.mark.parametrize("size", [1, 4095, 4096, 70_001, 1 << 20])
def test_clear_zeroes_exactly_the_array(workers, size):
    """Every byte of the array, none beside it: the array starts 3 bytes
    into a larger buffer of sentinels."""
    pool = ThreadPool(workers)
    backing = np.full(size + 8, 7, np.uint8)
    pool.clear(backing[3:3 + size])
    assert (backing[3:3 + size] == 0).all()
    assert (backing[:3] == 7).all() and (backing[3 + size:] == 7).all()
    pool.stop()


@pytest.mark.parametrize("workers", [0, 3])
@pytest.mark.parametrize("size", [1, 4095, 70_001, 1 << 20])
def test_copy_copies_exactly_the_array(workers, size):
    pool = ThreadPool(workers)
    source = np.random.default_rng(size).integers(0, 255, size, dtype=np.uint8)
    backing = np.full(size + 8, 7, np.uint8)
    pool.copy(backing[3:3 + size], source)
    np.testing.assert_array_equal(backing[3:3 + size], source)
    assert (backing[:3] == 7).all() and (backing[3 + size:] == 7).all()
    pool.stop()


def test_threads_for_every_core_keep_four_chunks_a_core(monkeypatch):
    from hpvm_cpu.codegen import jit
    monkeypatch.setattr(jit, "available_cores", lambda: 8)
    assert [jit.launch_chunks(t) for t in (None, 8, 16, 4, 1)] == [32, 32, 64, 4, 1]


def test_chunks_of_one_dimensional_nodes_are_whole_strips():
    assert split_range(256, 64, 16) == [(16 * i, 16 * i + 16) for i in range(16)]
    assert split_range(100, 3, 16) == [(0, 48), (48, 80), (80, 100)]
    assert split_range(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert split_range(0, 4, 16) == [(0, 0)]


def test_heavy_instances_are_chunked_in_whole_lane_strips(bump, monkeypatch):
    """A chunk holds whole strips of 16 lanes where there are strips for
    every core, even where one instance is worth a chunk (a strip cut by a
    chunk runs its instances one at a time: trmm at 1000^2 on 2 cores, 46
    -> 17 ms); with fewer strips than cores, single instances (1 x 16
    instances of 7 x 7 pixels ran as one strip on one core)."""
    import hpvm_cpu.codegen.jit as jit

    def firsts(count, cores):
        monkeypatch.setattr(jit, "available_cores", lambda: cores)
        calls = bump._calls(bump._packer.pack({"x": np.zeros(count)}), (count,), cores)
        return [int(first) for _, first, _ in calls.table]
    assert len(firsts(1000, 2)) == 8 and all(first % 16 == 0 for first in firsts(1000, 2))
    assert firsts(1000, 16)[:3] == [0, 16, 32] and len(firsts(1000, 16)) == 63
    assert len(firsts(40, 16)) == 40   # 3 strips for 16 cores: an instance a chunk
