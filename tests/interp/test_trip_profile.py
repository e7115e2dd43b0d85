"""Trip counts profiled by the interpreter become trip_count hints on the
loops whose bounds come from data, and nowhere else."""
import numpy as np

from benchmarks.programs.spmv import make_inputs, spmv
from benchmarks.programs.ms_stencil2d import ms_stencil2d
from hpvm.interp.trip_profile import with_profiled_trip_counts
from hpvm.ir import kernel as k
from hpvm.ir.visit import walk


def loops(module):
    return [s for f in module.functions.values() for s in walk(f.body) if isinstance(s, k.For)]


def test_a_data_dependent_loop_gets_its_mean_trip_count():
    inputs = make_inputs("small", np.random.default_rng(0))
    module, marked = with_profiled_trip_counts(spmv.build(), inputs)
    row_lengths = np.diff(inputs["row_ptr"])
    assert marked == 1
    [loop] = [l for l in loops(module) if l.trip_count is not None]
    assert loop.trip_count == round(row_lengths.mean())


def test_loops_with_constant_bounds_are_left_alone():
    rng = np.random.default_rng(0)
    inputs = {"orig": rng.integers(0, 9, (8, 6), dtype=np.int32),
              "filter": rng.integers(0, 9, 9, dtype=np.int32)}
    module, marked = with_profiled_trip_counts(ms_stencil2d.build(), inputs)
    assert marked == 0 and all(l.trip_count is None for l in loops(module))


def test_loops_bounded_by_sizes_are_left_to_the_sizes():
    from examples.matmul import matmul
    rng = np.random.default_rng(0)
    inputs = {"A": rng.random((4, 3), dtype=np.float32), "B": rng.random((3, 5), dtype=np.float32)}
    module, marked = with_profiled_trip_counts(matmul.build(), inputs)
    assert marked == 0
