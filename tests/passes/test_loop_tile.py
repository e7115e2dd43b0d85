"""loop-tile: a nest that walks one array along its rows and another
along its columns runs in square blocks of iterations, computing exactly
what it did (the interpreter runs both; every usable target runs both,
bit for bit, which may contract a multiply-add as the interpreter does
not), on sizes that are not multiples of the block; nests that walk
memory along one loop only, or that are short, are left alone; a named
nest whose order could show is refused with the reason."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.testing import usable_targets

PROGRAM = """hpvm 1.0
module m

func @k(in a: f32[M, M], in b: f32[M, M], out c: f32[M, M]) {
  for i in 0 .. STOP step STEP {
    for j in 0 .. M step 1 {
      BODY
    }
  }
}

graph @main(in a: f32[M, M], in b: f32[M, M], out c: f32[M, M]) {
  node n = @k [1]
  in a -> n.a
  in b -> n.b
  out n.c -> c
}

root @main
"""
TRANSPOSED = "c[i, j] = a[i, j] + b[j, i]"


def program(body=TRANSPOSED, stop="M", step="1"):
    return parse_module(PROGRAM.replace("BODY", body).replace("STOP", stop)
                        .replace("STEP", step))


def inputs(m=13):
    rng = np.random.default_rng(1)
    return {"a": rng.standard_normal((m, m)).astype(np.float32),
            "b": rng.standard_normal((m, m)).astype(np.float32)}


def check_same(module, tiled):
    for m in (13, 4, 1):
        want = run_module(module, inputs(m))["c"]
        np.testing.assert_array_equal(run_module(tiled, inputs(m))["c"], want)
        for target in usable_targets(("cpu", "gpu_opencl")):   # as the target runs the nest
            got = hpvm.compile(tiled, [target])(**inputs(m))["c"]
            as_written = hpvm.compile(module, [target])(**inputs(m))["c"]
            np.testing.assert_array_equal(got, as_written, err_msg=target)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=target)


def test_a_transposed_read_runs_in_blocks():
    module = program()
    tiled = run_pipeline(module, "loop-tile{size=4}", verify_each=True)
    text = print_module(tiled)
    assert """  for i_block in 0 .. M step 4 {
    for j_block in 0 .. M step 4 {
      for i in i_block .. min(i_block + 4, M) step 1 {
        for j in j_block .. min(j_block + 4, M) step 1 {
          c[i, j] = a[i, j] + b[j, i]""" in text
    check_same(module, tiled)


def test_sums_shared_along_one_loop_keep_their_order_in_blocks():
    module = program("c[0, j] = c[0, j] + a[i, j] * b[j, i]")
    tiled = run_pipeline(module, "loop-tile{loops=k.i size=3}", verify_each=True)
    assert "i_block" in print_module(tiled)
    check_same(module, tiled)


@pytest.mark.parametrize("body, stop", [
    ("c[i, j] = a[i, j] + b[i, j]", "M"),      # contiguous along j only
    ("c[0, j] = c[0, j] + a[0, i] * b[i, j]", "M"),   # contiguous along both, no line
                                                       # read again a step of j later
    (TRANSPOSED, "8"),                           # a loop shorter than a block
])
def test_nests_blocks_would_not_help_are_left_alone(body, stop):
    module = program(body, stop)
    assert run_pipeline(module, "loop-tile{size=16}") == module


@pytest.mark.parametrize("changes, reason", [
    ({"body": "c[i, j] = c[j, i] + a[i, j]"}, "writes 'c' at elements another iteration may"),
    ({"step": "2"}, "has a loop that does not step by 1"),
])
def test_nests_whose_order_could_show_are_refused_with_the_reason(changes, reason):
    module = program(**changes)
    assert run_pipeline(module, "loop-tile") == module
    with pytest.raises(PassError, match=reason):
        run_pipeline(module, "loop-tile{loops=k.i}")


def test_bad_options_name_the_fix():
    with pytest.raises(PassError, match="no loop 'k.x'.*the loops are: k.i, k.j"):
        run_pipeline(program(), "loop-tile{loops=k.x}")
    with pytest.raises(PassError, match="size=1 makes no blocks"):
        run_pipeline(program(), "loop-tile{size=1}")


def test_a_nest_is_blocked_once_and_the_tuner_offers_block_sizes():
    from hpvm.tune import space
    module = program()
    once = run_pipeline(module, "loop-tile")
    assert run_pipeline(once, "loop-tile,loop-interchange") == once
    design = space(module, ["cpu"])
    assert design.parameter("block k.i").values == (0, 16, 32, 64, 128)
    realised = design.realise({"block k.i": 16, "interchange k.i": True})
    assert realised.pipeline.startswith("loop-tile{loops=k.i size=16},loop-interchange{loops=k.i}")
    check_same(module, realised.module)
