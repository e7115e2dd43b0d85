"""latency-unroll: the loops of launches too small to fill the device are
unrolled by a factor their instance count allows (behind tests of the
count where the replication is symbolic, folded where it is constant),
within a budget of loads an iteration; loops it must leave are left; every
branch computes the program's results on every usable scalar target."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir.kernel import For, If
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.visit import walk
from hpvm.passes import PassError, run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

PROGRAM = """hpvm 1.0
module m

func @k(in x: f32[N, K], in w: f32[K], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    acc = acc + x[i, k] * w[k]
  }
  for r in 0 .. 3 step 1 {
    acc = acc + x[i, r]
  }
  y[i] = acc
}

graph @main(in x: f32[N, K], in w: f32[K], out y: f32[N]) {
  node a = @k [REPLICATION]
  in x -> a.x
  in w -> a.w
  out a.y -> y
}

root @main
"""


def module(replication: str = "N"):
    return parse_module(PROGRAM.replace("REPLICATION", replication))


def loops(module_, function: str = "k") -> list[For]:
    return [n for n in walk(module_.function(function).body) if isinstance(n, For)]


def test_a_symbolic_launch_gets_one_copy_a_factor_behind_tests_of_its_count():
    text = print_module(run_pipeline(module(), "latency-unroll{in_flight=4096}"))
    assert "if instance_count(0) * 64 <= 4096 {" in text
    assert "} else if instance_count(0) * 32 <= 4096 {" in text
    assert "} else if instance_count(0) * 16 <= 4096 {" in text
    assert "} else if instance_count(0) * 8 <= 4096 {" in text
    steps = sorted(loop.step for loop in loops(run_pipeline(module(),
                                                            "latency-unroll{in_flight=4096}")))
    # 64, 32, 16 and 8 copies, their remainders and the loop as written;
    # the 3-trip loop is left to the back end.
    assert steps == [1, 1, 1, 1, 1, 1, 8, 16, 32, 64]


@pytest.mark.parametrize("instances, step", [(32, 64), (128, 32), (256, 16), (512, 8),
                                             (4096, 1)])
def test_a_constant_launch_keeps_the_one_copy_its_size_allows(instances, step):
    unrolled = run_pipeline(module(str(instances)), "latency-unroll{in_flight=4096}")
    assert not any(isinstance(n, If) for n in walk(unrolled.function("k").body))
    assert max(loop.step for loop in loops(unrolled)) == step


def test_loads_an_iteration_bound_the_factor():
    unrolled = run_pipeline(module("64"), "latency-unroll{in_flight=4096 max_loads=16}")
    assert max(loop.step for loop in loops(unrolled)) == 8   # 2 loads x 8 copies = 16


def test_hinted_loops_are_left():
    text = print_module(module()).replace("for k in 0 .. K step 1 {",
                                          "for k in 0 .. K step 1 [unroll = 2] {")
    assert "[unroll = 2]" in text
    unrolled = run_pipeline(parse_module(text), "latency-unroll{in_flight=4096}")
    assert print_module(unrolled) == text


def test_a_loop_reading_what_it_writes_is_left():
    """Its loads may wait for the stores of the iteration before (a
    wavefront, a prefix sum): copies would only lengthen the kernel."""
    text = print_module(module()).replace("out y: f32[N]", "out y: f32[N], out z: f32[N, K]"
                                          ).replace(
        "    acc = acc + x[i, k] * w[k]\n",
        "    z[i, k] = acc\n    acc = acc + x[i, k] * z[i, max(k - 1, 0)]\n").replace(
        "  out a.y -> y\n", "  out a.y -> y\n  out a.z -> z\n").replace(
        "in w: f32[K], out y: f32[N]) {\n  node", "in w: f32[K], out y: f32[N], out z: f32[N, K]) {"
                                             "\n  node")
    unrolled = run_pipeline(parse_module(text), "latency-unroll{in_flight=4096}")
    assert print_module(unrolled) == print_module(parse_module(text))


@pytest.mark.parametrize("options, words", [
    ("factors=1", "at least 2"), ("factors=a,8", "integers"), ("in_flight=0", "in_flight=0")])
def test_bad_options_are_refused_with_the_fix(options, words):
    with pytest.raises(PassError, match=words):
        run_pipeline(module(), f"latency-unroll{{{options}}}")


@pytest.mark.parametrize("target", usable_targets(["interp", "cpu", "gpu_opencl"]))
@pytest.mark.parametrize("n", [3, 50, 100, 200, 700])
def test_every_branch_computes_the_programs_results(target, n):
    """in_flight=2048: 3 instances run the 64 copies, 50 the 32, 100 the 16,
    200 the 8, 700 the loop."""
    original = module()
    unrolled = run_pipeline(original, "latency-unroll{in_flight=2048}", verify_each=True)
    rng = np.random.default_rng(n)
    inputs = {"x": rng.standard_normal((n, 45)).astype(np.float32),
              "w": rng.standard_normal(45).astype(np.float32)}
    got = hpvm.compile(unrolled, [target])(**inputs)
    assert_outputs_close(got, run_module(original, inputs), rtol=1e-5, atol=1e-5)
