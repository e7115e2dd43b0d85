"""loop-interchange on loops that walk each column in several passes:
the loop cut into strips of columns, the values it declares kept in
arrays of a strip, its statements run in turn for the whole strip, and
each pass swapped (core/passes/column_strips.py).  Each column's values
come out bit for bit; where columns could share what the body writes,
or the walks already run along rows, the loop is left as written."""
import numpy as np
import pytest

import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.text import print_module
from hpvm.lang import Buffer, Out, f32, task
from hpvm.passes import PassError, column_strips, run_pipeline

from benchmarks.loop_orders import FORMS, inputs_for


def loop_order(module):
    return [line.split()[1] for line in print_module(module).splitlines()
            if line.strip().startswith("for ")]


@pytest.mark.parametrize("name, order, strip", [
    ("normalise_columns", ["j_strip", "j", "i", "j", "i_1", "j"], 64),
    ("column_softmax", ["j_strip", "j", "i", "j", "j", "i_1", "j", "i_2", "j"], 64),
    ("center_channels", ["c_strip", "c", "i", "j", "c", "c", "i_1", "j_1", "c"], 8),
])
def test_each_walk_of_a_strip_runs_along_its_rows(name, order, strip, monkeypatch):
    """Strips of 64 columns of 150 (64, 64 and 22), or of 8 channels of
    16 (the channel loop sinks below both of the image's loops)."""
    monkeypatch.setattr(column_strips, "MAX_STRIP", strip)
    module = FORMS[name].build()
    strips = run_pipeline(module, "loop-interchange", verify_each=True)
    assert loop_order(strips) == order
    assert f"step {strip} {{" in print_module(strips)
    inputs = inputs_for(name, np.random.default_rng(1), 48, 150)
    np.testing.assert_array_equal(Interpreter(strips).run(**inputs)["out"],
                                  Interpreter(module).run(**inputs)["out"])


@hl.program
def shared(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]], last: Out[Buffer[f32, 1]]):
    with task(ins=(a,), outs=(out, last), name="shared"):
        for j in range(N):
            total: f32 = 0.0
            for i in range(M):
                total += a[i, j]
            for i in range(M):
                out[i, j] = a[i, j] / total
            last[0] = total


@hl.program
def carried(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]]):
    with task(ins=(a,), outs=(out,), name="carried"):
        running: f32 = 0.0
        for j in range(N):
            for i in range(M):
                running += a[i, j]
            for i in range(M):
                out[i, j] = a[i, j] / running


@hl.program
def crossed(a: Buffer[f32, "N", "N"], out: Out[Buffer[f32, "N", "N"]]):
    with task(ins=(a,), outs=(out,), name="crossed"):
        for j in range(N):
            total: f32 = 0.0
            for i in range(N):
                total += a[i, j]
            for i in range(N):
                out[i, j] = out[j, i] + total


@hl.program
def rows(a: Buffer[f32, "M", "N"], out: Out[Buffer[f32, "M", "N"]]):
    with task(ins=(a,), outs=(out,), name="rows"):
        for i in range(M):
            total: f32 = 0.0
            for j in range(N):
                total += a[i, j]
            for j in range(N):
                out[i, j] = a[i, j] / total


@pytest.mark.parametrize("program, reason", [
    (shared, "every column stores last[0]"),
    (carried, "a sum runs on from column to column"),
    (crossed, "column j reads the row j others write"),
    (rows, "the walks already run along rows"),
])
def test_loops_whose_columns_could_share_or_that_walk_rows_are_left(program, reason):
    module = program.build()
    assert run_pipeline(module, "loop-interchange") == module, reason


def test_a_strip_s_arrays_fit_a_third_of_an_l1_cache():
    one = run_pipeline(FORMS["normalise_columns"].build(), "loop-interchange")
    assert "private total_strip: f32[1024] = undef" in print_module(one)
    assert column_strips._strip_size([f32] * 6) == 512
    assert column_strips._strip_size([f32] * 3 + [hl.f64] * 3) == 256


def test_a_named_loop_that_cannot_be_cut_is_refused_with_the_reason():
    with pytest.raises(PassError, match="is not a perfect nest"):
        run_pipeline(shared.build(), "loop-interchange{loops=shared.j}")
