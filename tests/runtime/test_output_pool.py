"""The output pool (core/runtime/output_pool.py): arrays over kept blocks,
a block back in the pool only once every array over it is gone; the
static schedule's outputs reuse the memory of results the caller dropped
and never of results it holds."""
import gc
import threading

import numpy as np
import pytest

from hpvm.ir.text import parse_module
from hpvm.runtime import compile, output_pool
from hpvm.runtime.output_pool import MIN_BYTES, OutputPool

from .test_static_run import PROGRAM, check

BIG = (MIN_BYTES // 4,)   # f32 elements in one MIN_BYTES block


def test_an_array_is_as_np_empty_makes_it():
    array = OutputPool().empty((3, BIG[0] // 3 + 1), np.float32)
    assert array.shape == (3, BIG[0] // 3 + 1) and array.dtype == np.float32
    assert array.flags.c_contiguous and array.flags.writeable
    array[:] = 2.0
    assert float(array.sum()) == 2.0 * array.size


def test_a_dropped_array_gives_its_block_to_the_next_one():
    pool = OutputPool()
    first = pool.empty(BIG, np.float32)
    address = first.ctypes.data
    held = pool.empty(BIG, np.float32)
    assert held.ctypes.data != address
    del first
    assert pool.idle_blocks() == 1
    assert pool.empty(BIG, np.float32).ctypes.data == address


def test_a_view_keeps_the_block_taken():
    pool = OutputPool()
    array = pool.empty(BIG, np.float32)
    view = array[10:20].reshape(2, 5)
    del array
    gc.collect()
    assert pool.idle_blocks() == 0
    view[:] = 1.0
    other = pool.empty(BIG, np.float32)
    assert not np.shares_memory(other, view)
    del view
    assert pool.idle_blocks() == 1


def test_small_arrays_and_spare_blocks_are_not_kept():
    pool = OutputPool()
    small = pool.empty((4,), np.float64)
    assert small.base is None
    arrays = [pool.empty(BIG, np.float32) for _ in range(output_pool.IDLE_PER_SIZE + 2)]
    del arrays
    assert pool.idle_blocks() == output_pool.IDLE_PER_SIZE


def test_arrays_of_other_threads_come_back_too():
    pool = OutputPool()
    made = []
    threads = [threading.Thread(target=lambda: made.append(pool.empty(BIG, np.float32)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    addresses = {a.ctypes.data for a in made}
    assert len(addresses) == 4
    made.clear()
    assert pool.idle_blocks() == output_pool.IDLE_PER_SIZE


@pytest.fixture(scope="module")
def exe():
    return compile(parse_module(PROGRAM), targets=["cpu"])


def test_a_run_reuses_the_memory_of_outputs_the_caller_dropped(exe):
    """'sum' is written whole by its node: made uncleared, from the pool.
    The bound launch holds the last run's array until the next run binds
    its own, so runs take turns between two blocks."""
    a = np.linspace(-1, 1, 2 * BIG[0], dtype=np.float32)
    addresses = []
    for s in (2.0, 3.0, 4.0):
        outputs = exe(a=a, s=s)
        check(outputs, a, s)
        addresses.append(outputs["sum"].ctypes.data)
        del outputs
    assert addresses[2] == addresses[0] != addresses[1]


def test_a_run_never_writes_over_outputs_the_caller_holds(exe):
    a = np.linspace(-1, 1, 2 * BIG[0], dtype=np.float32)
    kept = [exe(a=a, s=float(s)) for s in range(3)]
    for s, outputs in enumerate(kept):
        check(outputs, a, float(s))
