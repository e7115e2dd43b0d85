"""The output pool (core/runtime/output_pool.py): arrays over kept blocks,
a block back in the pool only once every array over it is gone; the
static schedule's outputs reuse the memory of results the caller dropped
and never of results it holds."""
import gc
import threading
import weakref

import numpy as np
import pytest

from hpvm.host_arrays import LINE
from hpvm.ir.text import parse_module
from hpvm.runtime import compile, output_pool
from hpvm.runtime.output_pool import MIN_BYTES, OutputPool

from .test_static_run import CHAIN, PROGRAM, check

BIG = (MIN_BYTES // 4,)   # f32 elements in one MIN_BYTES block


def test_an_array_is_as_np_empty_makes_it():
    array = OutputPool().empty((3, BIG[0] // 3 + 1), np.float32)
    assert array.shape == (3, BIG[0] // 3 + 1) and array.dtype == np.float32
    assert array.flags.c_contiguous and array.flags.writeable
    assert array.ctypes.data % LINE == 0   # host_arrays.py: whatever malloc's heap is like
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


@pytest.mark.parametrize("target", ["cpu", "interp"])  # the cpu's own launcher; the default one
def test_a_run_reuses_the_memory_of_the_output_the_caller_dropped(target):
    """A run lets go of its arrays when it ends (the bound launches hold
    them only while they run): each run writes its output, made uncleared
    from the pool, into the memory the last run's dropped output had, still
    in the cache; the caller's input is not kept alive either."""
    exe = compile(parse_module(CHAIN), targets=[target], options={"task_parallelism": False})
    a = np.linspace(-1, 1, 2 * BIG[0], dtype=np.float32)
    addresses = []
    for s in (2.0, 3.0, 4.0):
        outputs = exe(a=a, s=s)
        np.testing.assert_allclose(outputs["y"], a * s * s, rtol=1e-6)
        addresses.append(outputs["y"].ctypes.data)
        del outputs
    assert len(set(addresses)) == 1
    input_gone = weakref.ref(a)
    del a
    assert input_gone() is None


def test_every_output_of_a_size_finds_its_block_again(exe):
    """Several outputs of one size: the pool keeps a block for each (and as
    many again for a caller that holds the last results)."""
    a = np.linspace(-1, 1, 2 * BIG[0], dtype=np.float32)
    schedule_of = exe._static_program()
    seen = []
    for s in (2.0, 3.0, 4.0):
        outputs = exe(a=a, s=s)
        check(outputs, a, s)
        schedule = schedule_of.schedules.idle()[0]
        pooled = {fresh.slot for fresh in schedule.fresh if fresh.device is None}
        names = [name for name, slot, handed in schedule.outputs if handed and slot in pooled]
        seen.append({outputs[name].ctypes.data for name in names})
        del outputs
    assert len(names) >= 2 and seen[0] == seen[1] == seen[2]


def test_a_run_never_writes_over_outputs_the_caller_holds(exe):
    a = np.linspace(-1, 1, 2 * BIG[0], dtype=np.float32)
    kept = [exe(a=a, s=float(s)) for s in range(3)]
    for s, outputs in enumerate(kept):
        check(outputs, a, float(s))


def test_the_default_launcher_wants_again_every_value_it_let_go():
    from hpvm.errors import ExecutionError
    from hpvm.target import Device, NodeRef

    class Recorder(Device):
        def launch(self, node, args):
            self.args = args

    device = Recorder()
    launch = device.bind(NodeRef("main", "first"), {"x": np.zeros(3), "s": 1.0})
    launch({"x": np.ones(3)})
    assert device.args["x"].tolist() == [1, 1, 1] and device.args["s"] == 1.0
    launch({"x": np.ones(3), "s": 2.0})
    with pytest.raises(ExecutionError, match="node 'first'.*'x'.*not given this port's value"):
        launch({"s": 3.0})
