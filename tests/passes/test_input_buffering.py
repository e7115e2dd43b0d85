"""input-buffering: a fixed-size read-only input of a single-work-item
kernel, read inside a loop, is copied once into a private array that the
reads use (form=single), or once per work group of a replicated node into
local memory (form=group); results stay the same on every usable scalar
target and on every corpus program; parameters that are not eligible are
refused with the reason."""
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


REPLICATED = PROGRAM.replace(
    "out b: f32[N]) {\n  for i in 0 .. N - 2 step 1 {",
    "out b: f32[N]) {\n  let i: i64 = instance_id(0)\n  if i < N - 2 {").replace(
    "  node k = @k\n", "  node k = @k [N]\n")
"""PROGRAM with one instance per element instead of a loop."""


@pytest.mark.parametrize("pipeline", ["input-buffering{form=group}",
                                      "input-buffering{form=group params=k.taps}"])
def test_a_replicated_node_shares_one_local_copy_per_work_group(pipeline):
    module = parse_module(REPLICATED)
    assert eligible_params(module, form="group") == ["k.taps"]   # once: read once, not in a loop
    result = run_pipeline(module, pipeline, verify_each=True)
    text = print_module(result)
    assert "node k = @k [N] {group = [256], padded_groups = true}" in text
    assert "local taps_local: f32[3]" in text and "for copy_index in lane .. 3 step 256" in text
    rng = np.random.default_rng(0)
    inputs = {"taps": rng.random(3, dtype=np.float32), "a": rng.random(1000, dtype=np.float32),
              "once": rng.random(2, dtype=np.float32)}   # 1000: the last group is padded
    expected = hpvm.compile(module, ["interp"])(**inputs)
    for target in usable_targets(("interp", "gpu_opencl")):
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 1e-6, 1e-6,
                             target)


def test_group_copies_compose_with_tiles():
    """A tiled node runs whole groups already: the copy goes before its
    own, and its guards stay."""
    from benchmarks.programs.ms_stencil2d import make_inputs, ms_stencil2d
    module = ms_stencil2d.build()
    result = run_pipeline(module, "tile{size=8},input-buffering{form=group "
                                  "params=stencil2d_tiled.filter}", verify_each=True)
    assert "filter_local" in print_module(result)
    inputs = make_inputs("small", np.random.default_rng(0))
    expected = hpvm.compile(module, ["interp"])(**inputs)
    for target in usable_targets(("interp", "gpu_opencl")):
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 1e-5, 1e-5,
                             target)


def test_a_single_work_item_is_refused_by_the_group_form():
    with pytest.raises(PassError, match=r"a single work item runs \(use form=single\)"):
        run_pipeline(parse_module(PROGRAM), "input-buffering{form=group params=k.taps}")


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_programs_keep_their_results(program):
    if program.make_frames is not None:
        pytest.skip("streaming program")
    module = run_pipeline(program.build(), "sequentialize,input-buffering", verify_each=True)
    inputs = program.make_inputs(np.random.default_rng(1))
    check_against_interpreter(module, inputs, usable_targets(("cpu",)),
                              rtol=max(program.rtol, 1e-5), atol=max(program.atol, 1e-6))
