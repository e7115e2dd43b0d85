"""register-tile on convolutions written as kernel programs: a perfect
nest of loops over channels and taps is taken as one loop over their
steps, so a convolution runs as register tiles over panels packed from
the image (im2col, per block of steps) and from the filters.  Six
independently written forms (benchmarks/convolutions.py) qualify and
give, in the interpreter, the very sums of the program as written on
ragged sizes; the cpu schedules them by default and agrees with the
golden model; a depthwise convolution (nothing reused across output
channels) and a nest whose inner bounds follow an outer variable are
left alone."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.frontend.compile import load_python_file
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE, eligible_nodes
from hpvm.testing import usable_targets

from benchmarks import convolutions as PROGRAMS

CHECKS = load_python_file(Path(__file__).with_name("tiling_checks.py"))
SMALL = "register-tile{rows=3 cols=4 chunk=6 panel=8 kblock=5}"
"""Blocks far smaller than the sizes, so that every ragged edge is met."""
SIZES = [(3, 5, 9, 3), (1, 1, 3, 3), (4, 7, 6, 1), (5, 9, 11, 2)]
"""(channels in, out, image size, taps)."""
TWO_DIMENSIONS = ("flat_pixels", "conv1d")


_outputs = CHECKS.outputs


def _check(name, pipeline, sizes=SIZES):
    module = PROGRAMS.TILED[name].build()
    tiled = run_pipeline(module, pipeline, verify_each=True)
    rng = np.random.default_rng(1)
    for size in sizes:
        inputs = PROGRAMS.inputs_for(name, rng, *size)
        expected, got = _outputs(module, inputs), _outputs(tiled, inputs)
        for port, value in expected.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{port} at {size}")


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_every_written_form_of_a_convolution_qualifies(name):
    module = PROGRAMS.TILED[name].build()
    assert len(eligible_nodes(module)) == 1
    text = print_module(run_pipeline(module, SMALL, verify_each=True))
    assert f"{SCHEDULE_ATTRIBUTE} = [3, 4]" in text
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_a_flattened_pixels_row_and_column_are_divided_once_per_column(name):
    """Packing the image's panel divides the output pixel by the width
    once per column of a tile, before the copy's steps, not at each step."""
    text = print_module(run_pipeline(PROGRAMS.TILED[name].build(), SMALL))
    divided = name in ("flat_pixels", "batched_strided")
    assert text.count("private column_index") == (4 if divided else 0)


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
@pytest.mark.parametrize("pipeline", [SMALL, SMALL.replace("}", " pack=false}")])
def test_results_equal_the_convolution_as_written_on_ragged_sizes(name, pipeline):
    _check(name, pipeline)


GROUPED = "register-tile{rows=3 cols=4 chunk=6 panel=16 kblock=5}"
"""Panels wider than the images' rows: an instance takes several output
rows (or images), the filters' panel packed once for them all."""


@pytest.mark.parametrize("name", ["direct", "batched_strided", "taps_outside",
                                  "channels_last"])
def test_an_instance_takes_several_values_of_a_dimension_the_filters_do_not_follow(name):
    """With the channels last too (y[oh, ow, k]): the filters are taken as
    the rows, and the output channels not as the columns, so that the
    filters are packed once for several output rows."""
    module = PROGRAMS.TILED[name].build()
    text = print_module(run_pipeline(module, GROUPED))
    assert "group_count" in text
    _check(name, GROUPED, [(3, 5, 7, 3), (2, 4, 6, 2), (1, 2, 9, 3)])


@pytest.mark.parametrize("name", TWO_DIMENSIONS)
def test_work_groups_give_the_same_results(name):
    _check(name, "register-tile{form=group rows=3 cols=2 group=4 kblock=5}")


@pytest.mark.parametrize("target", usable_targets(("cpu",)))
@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_the_cpu_schedules_convolutions_by_default_and_agrees_with_the_golden_model(target,
                                                                                    name):
    rng = np.random.default_rng(2)
    CHECKS.check_scheduled_by_default(PROGRAMS.TILED[name].build(), target, [
        (size, PROGRAMS.inputs_for(name, rng, *size))
        for size in [(16, 24, 14, 3), (3, 40, 9, 2)]])


def test_a_depthwise_convolution_is_left_alone_and_a_named_one_refused():
    module = PROGRAMS.UNTILED["depthwise"].build()
    assert eligible_nodes(module) == []
    with pytest.raises(PassError) as error:
        run_pipeline(module, "register-tile{nodes=depthwise}")
    assert "reused across instances" in str(error.value)


def test_a_nest_whose_inner_bounds_follow_an_outer_variable_is_not_taken_as_one_loop():
    text = """hpvm 1.2
module m

func @tri(in a: f32[M, K], in b: f32[K, N], out c: f32[M, N]) {
  let i: i64 = instance_id(0)
  let j: i64 = instance_id(1)
  let acc: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    for q in 0 .. k step 1 {
      acc = acc + a[i, q] * b[q, j]
    }
  }
  c[i, j] = acc
}

graph @g(in a: f32[M, K], in b: f32[K, N], out c: f32[M, N]) {
  node tri = @tri [M, N]
  in a -> tri.a
  in b -> tri.b
  out tri.c -> c
}

root @g
"""
    with pytest.raises(PassError) as error:
        run_pipeline(parse_module(text), "register-tile{nodes=tri}")
    assert "holds statements other than lets and assignments" in str(error.value)
