"""stencil-fusion: a producer folded into the stencil that reads its
output, each read recomputed; refusals name the reason; fused programs
compute what they did on every usable target (blur, a producer with a
scalar port and renamed symbols, every benchmark program with a pair)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.stencil_fusion import fusible_stencils
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]

SMOOTH = """hpvm 1.0
module smooth

func @scale(in a: f32[N], in k: f32, out s: f32[N]) {
  let i: i64 = instance_id(0)
  let twice: f32
  twice = a[i] * k
  s[i] = twice + f32(1.0)
}

func @window(in s: f32[M], out b: f32[M]) {
  let i: i64 = instance_id(0)
  b[i] = s[max(i - 1, 0)] + s[i] + s[min(i + 1, M - 1)]
}

graph @main(in a: f32[N], in k: f32, out b: f32[N]) {
  node scale = @scale [N]
  node window = @window [M]
  edge scale.s -> window.s all-to-all
  in a -> scale.a
  in k -> scale.k
  out window.b -> b
}

root @main
"""

INPUTS = {"a": np.linspace(-1, 1, 23, dtype=np.float32), "k": np.float32(3.0)}


def fused(text: str, options: str = "") -> str:
    return print_module(run_pipeline(parse_module(text), f"stencil-fusion{options},dce",
                                     verify_each=True))


def check_on_every_target(original, fused_module, inputs, rtol=1e-6, atol=1e-6):
    expected = Interpreter(original).run(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(fused_module, [target])(**inputs), expected,
                             rtol, atol, f"{original.name} fused, on {target}")


def test_the_producer_is_recomputed_at_each_read():
    text = fused(SMOOTH)
    assert text[text.index("func"):text.index("graph")] == """func @scale_window(out b: f32[M], in a: f32[M], in k: f32) {
  let i: i64 = instance_id(0)
  b[i] = a[max(i - 1, 0)] * k + f32(1.0) + (a[i] * k + f32(1.0)) + (a[min(i + 1, M - 1)] * k + f32(1.0))
}

"""
    assert "node window = @scale_window [M]\n  in a -> window.a\n  in k -> window.k\n" in text
    check_on_every_target(parse_module(SMOOTH), parse_module(text), INPUTS)


def test_a_producer_fed_by_another_node_is_fed_there_after():
    text = SMOOTH.replace("  node scale = @scale [N]\n", "  node first = @scale [N]\n"
                          "  node scale = @scale [N]\n").replace(
        "  in a -> scale.a\n", "  in a -> first.a\n  edge first.s -> scale.a all-to-all\n"
                               "  in k -> first.k\n")
    result = fused(text, "{pairs=scale:window}")
    assert "edge first.s -> window.a all-to-all" in result
    check_on_every_target(parse_module(text), parse_module(result), INPUTS)


CHANNELS = """hpvm 1.0
module channels

func @split(in a: f32[N], out s: f32[2, N]) {
  let i: i64 = instance_id(0)
  let v: f32 = a[i]
  let scale: f32 = f32(2.0)
  if i % 2 == 0 {
    s[0, i] = v
    s[1, i] = v * scale
  } else {
    scale = f32(3.0)
    s[1, i] = f32(0.0) - v
    s[0, i] = v * scale
  }
}

func @mix(in s: f32[2, M], out b: f32[M]) {
  let i: i64 = instance_id(0)
  let total: f32 = s[1, min(i + 1, M - 1)]
  for c in 0 .. 2 step 1 {
    total = total + s[c, max(i - 1, 0)] * f32(c + 1)
  }
  b[i] = total
}

graph @main(in a: f32[N], out b: f32[N]) {
  node split = @split [N]
  node mix = @mix [M]
  edge split.s -> mix.s all-to-all
  in a -> split.a
  out mix.b -> b
}

root @main
"""


def test_a_producer_with_branches_and_channels_is_if_converted():
    """Stores under an if merge as selects; a read at a constant channel
    takes that channel's value, a read at a loop's channel selects."""
    result = fused(CHANNELS, "{pairs=split:mix}")
    assert result.count("node ") == 1 and "select(" in result
    check_on_every_target(parse_module(CHANNELS), parse_module(result),
                          {"a": np.linspace(-1, 1, 23, dtype=np.float32)})
    # a[i] in each arm of each channel's select: 2 loads at channel 1, 4 at
    # both channels (the loop's reads), twice
    assert fused(CHANNELS, "{max_loads=9}").count("node ") == 2
    assert fused(CHANNELS, "{max_loads=10}").count("node ") == 1


@pytest.mark.parametrize("change, message", [
    (("  }\n}", "  }\n  s[1, i] = v + scale\n}"), None),
    (("    s[1, i] = f32(0.0) - v\n", ""),
     "'@split' does not store every element of 's' in every instance"),
    (("    s[1, i] = v * scale", "    s[i % 2, i] = v * scale"),
     "'@split' stores 's' at a channel that is not a constant"),
    (("  }\n}", "  }\n  s[1, i] = s[1, i] + scale\n}"),
     "'@split' is not code of lets, assignments, ifs and stores of 's'"),
])
def test_channels_and_branches_that_cannot_be_told_are_refused(change, message):
    text = CHANNELS.replace(*change)
    if message is None:
        assert fused(text, "{pairs=split:mix}").count("node ") == 1
        return
    with pytest.raises(PassError, match=message):
        run_pipeline(parse_module(text), "stencil-fusion{pairs=split:mix}")


def test_the_heuristic_leaves_expensive_recomputation():
    assert fused(SMOOTH, "{max_loads=2}").count("node ") == 2
    assert fusible_stencils(parse_module(SMOOTH)) == ["scale:window"]
    in_a_loop = SMOOTH.replace("  b[i] = s[max(i - 1, 0)] + s[i] + s[min(i + 1, M - 1)]",
                               "  b[i] = f32(0.0)\n  for j in 0 .. M step 1 {\n"
                               "    b[i] = b[i] + s[j]\n  }")
    assert fused(in_a_loop, "{max_loads=1000}").count("node ") == 2
    assert fused(in_a_loop, "{pairs=scale:window}").count("node ") == 1


@pytest.mark.parametrize("change, message", [
    (("  out window.b -> b\n", "  out window.b -> b\n  out scale.s -> b2\n"),
     "'scale' must have one output that only 'window' reads"),
    (("  s[i] = twice + f32(1.0)", "  s[N - 1 - i] = twice"),
     "'@scale' stores 's' at elements other than its instance's"),
    (("  twice = a[i] * k\n", "  for j in 0 .. 2 step 1 {\n    twice = a[i] * k\n  }\n"),
     "'@scale' is not code of lets, assignments, ifs and stores of 's' at its instance's"),
    (("node scale = @scale [N]", "node scale = @scale [N] hint cpu"),
     "their hints differ"),
    (("node scale = @scale [N]", "node scale = @scale [N - 1]"),
     "'s' does not have the shape of the producer's replication"),
    (("  s[i] = twice + f32(1.0)", "\n".join(["  twice = twice + twice"] * 40)
      + "\n  s[i] = twice"), "has more than 2000 terms once its variables are replaced"),
    (("s[max(i - 1, 0)] + s[i] + s[min(i + 1, M - 1)]", "s[i]"),
     "'window' reads 's' only at its own instance's elements (node-fusion fuses"),
])
def test_illegal_pairs_are_refused_with_the_reason(change, message):
    text = SMOOTH.replace(*change)
    if "b2" in change[1]:
        text = text.replace("out b: f32[N]) {", "out b: f32[N], out b2: f32[N]) {")
    with pytest.raises(PassError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_pipeline(parse_module(text), "stencil-fusion{pairs=scale:window}")
    assert fusible_stencils(parse_module(text)) == []


def test_an_unknown_pair_names_the_fix():
    with pytest.raises(PassError, match="no graph has nodes 'scale' and 'nope'"):
        run_pipeline(parse_module(SMOOTH), "stencil-fusion{pairs=scale:nope}")


def benchmark_names() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import all_benchmarks
    return [b.name for b in all_benchmarks() if fusible_stencils(b.build())]


def test_blur_is_among_the_benchmarks_with_a_pair():
    assert "blur" in benchmark_names()


@pytest.mark.parametrize("name", benchmark_names())
def test_fused_benchmark_programs_match_their_numpy_reference(name):
    from benchmarks.suite import get
    bench = get(name)
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    module = run_pipeline(bench.build(), "stencil-fusion{max_loads=1000},node-fusion,dce",
                          verify_each=True)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(**inputs), bench.reference(inputs),
                             bench.rtol, bench.atol, f"{name} fused, on {target}")
