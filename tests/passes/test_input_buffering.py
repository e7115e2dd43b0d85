"""input-buffering: a fixed-size read-only input of a single-work-item
kernel, read inside a loop, is copied once into a private array that the
reads use; results stay the same on every usable scalar target and on
every corpus program; parameters that are not eligible are refused with
the reason."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.input_buffering import eligible_params
from hpvm.testing import assert_outputs_close, check_against_interpreter, usable_targets

CORPUS = load_python_file(Path(__file__).resolve().parents[1] / "corpus" / "programs.py").CORPUS

PROGRAM = """hpvm 1.0
module t

func @k(in taps: f32[3], in a: f32[N], in once: f32[2], out b: f32[N]) {
  for i in 0 .. N - 2 step 1 {
    let total: f32 = once[0]
    for t in 0 .. 3 step 1 {
      total = total + taps[t] * a[i + t]
    }
    b[i] = total
  }
}

graph @main(in taps: f32[3], in a: f32[N], in once: f32[2], out b: f32[N]) {
  node k = @k
  in taps -> k.taps
  in a -> k.a
  in once -> k.once
  out k.b -> b
}

root @main
"""


def test_a_fixed_size_input_read_in_a_loop_is_copied_once():
    module = parse_module(PROGRAM)
    assert eligible_params(module) == ["k.taps", "k.once"]
    result = run_pipeline(module, "input-buffering{params=k.taps}", verify_each=True)
    text = print_module(result)
    assert text[text.index("func"):text.index("  for i")] == """func @k(in taps: f32[3], in a: f32[N], in once: f32[2], out b: f32[N]) {
  private taps_buffered: f32[3]
  for copy_index in 0 .. 3 step 1 {
    taps_buffered[copy_index] = taps[copy_index]
  }
"""
    assert "taps_buffered[t] * a[i + t]" in text
    rng = np.random.default_rng(0)
    inputs = {"taps": rng.random(3, dtype=np.float32), "a": rng.random(50, dtype=np.float32),
              "once": rng.random(2, dtype=np.float32)}
    expected = hpvm.compile(module, ["interp"])(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 1e-6, 1e-6,
                             target)   # the cpu target may contract a * b + c


@pytest.mark.parametrize("name, reason", [
    ("k.a", "size that is not fixed"), ("k.b", "not a read-only"), ("k.zz", "names no parameter"),
])
def test_ineligible_parameters_are_refused_with_the_reason(name, reason):
    with pytest.raises(PassError, match=reason):
        run_pipeline(parse_module(PROGRAM), f"input-buffering{{params={name}}}")


def test_a_replicated_node_is_refused_until_sequentialized():
    from benchmarks.programs.ms_stencil2d import ms_stencil2d
    module = ms_stencil2d.build()
    with pytest.raises(PassError, match="every instance would copy it; sequentialize"):
        run_pipeline(module, "input-buffering{params=stencil2d.filter}")
    assert "stencil2d.filter" in eligible_params(run_pipeline(module, "sequentialize"))


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_programs_keep_their_results(program):
    if program.make_frames is not None:
        pytest.skip("streaming program")
    module = run_pipeline(program.build(), "sequentialize,input-buffering", verify_each=True)
    inputs = program.make_inputs(np.random.default_rng(1))
    check_against_interpreter(module, inputs, usable_targets(("cpu",)),
                              rtol=max(program.rtol, 1e-5), atol=max(program.atol, 1e-6))
