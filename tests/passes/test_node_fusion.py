"""node-fusion: producer-consumer kernel nodes that run instance by
instance become one node; the buffers between them become private
storage; stencils, paths through other nodes and mismatched replications
are refused with the reason; fused programs compute what they did on
every usable scalar target: interp, cpu, gpu_opencl (the corpus and
every benchmark program)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.node_fusion import fusible_pairs
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]

CHAIN = """hpvm 1.0
module chain

func @scale(in a: f32[N], out s: f32[N]) {
  let i: i64 = instance_id(0)
  s[i] = a[i] * f32(2.0)
}

func @offset(in s: f32[M], in bias: f32[K], out b: f32[M]) {
  let i: i64 = instance_id(0)
  b[i] = s[i] + bias[0]
}

graph @main(in a: f32[N], in bias: f32[K], out b: f32[N]) {
  node scale = @scale [N]
  node offset = @offset [M]
  edge scale.s -> offset.s all-to-all
  in a -> scale.a
  in bias -> offset.bias
  out offset.b -> b
}

root @main
"""


def fused(text: str, options: str = "") -> str:
    return print_module(run_pipeline(parse_module(text), f"node-fusion{options},dce",
                                     verify_each=True))


def test_a_chain_becomes_one_node_and_the_buffer_between_a_scalar():
    text = fused(CHAIN)
    assert text[text.index("func"):] == """func @scale_offset(in a: f32[N], in bias: f32[K], out b: f32[N]) {
  let s_private: f32 = f32(0.0)
  let i: i64 = instance_id(0)
  s_private = a[i] * f32(2.0)
  b[i] = s_private + bias[0]
}

graph @main(in a: f32[N], in bias: f32[K], out b: f32[N]) {
  node scale_offset = @scale_offset [N]
  in a -> scale_offset.a
  in bias -> scale_offset.bias
  out scale_offset.b -> b
}

root @main
"""


def test_other_dimensions_make_a_private_array():
    text = CHAIN.replace("f32[N]", "f32[3, N]").replace("f32[M]", "f32[3, M]").replace(
        "s[i] = a[i] * f32(2.0)", "for c in 0 .. 3 step 1 {\n    s[c, i] = a[c, i] * f32(2.0)\n  }"
    ).replace("b[i] = s[i] + bias[0]", "for c in 0 .. 3 step 1 {\n    b[c, i] = s[c, i] + bias[c]\n  }")
    result = fused(text)
    assert "private s_private: f32[3]" in result and "s_private[c] = a[c, i] * f32(2.0)" in result


def test_a_buffer_read_elsewhere_stays_a_port():
    text = CHAIN.replace("out b: f32[N]) {\n  node", "out b: f32[N], out s: f32[N]) {\n  node"
                         ).replace("  out offset.b -> b\n", "  out offset.b -> b\n  out scale.s -> s\n")
    result = fused(text)
    assert "(in a: f32[N], out s: f32[N], in bias: f32[K], out b: f32[N])" in result
    assert "out scale_offset.s -> s" in result


STENCIL = CHAIN.replace("b[i] = s[i] + bias[0]", "b[i] = s[min(i + 1, M - 1)] + bias[0]")


@pytest.mark.parametrize("text, message", [
    (STENCIL, "'offset' reads 's' at elements other instances of 'scale' write (a stencil)"),
    (CHAIN.replace("node offset = @offset [M]", "node offset = @offset [K]"),
     "their replications differ"),
    (CHAIN.replace("node scale = @scale [N]", "node scale = @scale [N] hint cpu"),
     "their hints differ (cpu and None)"),
])
def test_illegal_pairs_are_refused_with_the_reason(text, message):
    with pytest.raises(PassError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_pipeline(parse_module(text), "node-fusion{pairs=scale:offset}")
    assert fusible_pairs(parse_module(text)) == []


def test_a_path_through_another_node_prevents_fusion():
    text = CHAIN.replace("func @offset(in s: f32[M], in bias: f32[K]",
                         "func @offset(in s: f32[M], in t: f32[M], in bias: f32[K]").replace(
        "  node offset", "  node copy = @scale [N]\n  node offset").replace(
        "  in a -> scale.a\n", "  in a -> scale.a\n  edge scale.s -> copy.a all-to-all\n"
                               "  edge copy.s -> offset.t all-to-all\n")
    with pytest.raises(PassError, match="another node lies on a path between them"):
        run_pipeline(parse_module(text), "node-fusion{pairs=scale:offset}")


def test_an_unknown_pair_names_the_fix():
    with pytest.raises(PassError, match="no graph has nodes 'scale' and 'nope'"):
        run_pipeline(parse_module(CHAIN), "node-fusion{pairs=scale:nope}")


def check_fused_program(module, inputs, expected, rtol, atol):
    fused_module = run_pipeline(module, "node-fusion,dce", verify_each=True)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(fused_module, [target])(**inputs), expected,
                             rtol, atol, f"{module.name} fused, on {target}")


CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_fused_corpus_programs_match_the_interpreter(program):
    module = program.build()
    inputs = program.make_inputs(np.random.default_rng(5))
    check_fused_program(module, inputs, Interpreter(module).run(**inputs),
                        max(program.rtol, 1e-4), max(program.atol, 1e-5))


def benchmark_names() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import all_benchmarks
    return [b.name for b in all_benchmarks() if fusible_pairs(b.build())]


@pytest.mark.parametrize("name", benchmark_names())
def test_fused_benchmark_programs_match_their_numpy_reference(name):
    from benchmarks.suite import get
    bench = get(name)
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    check_fused_program(bench.build(), inputs, bench.reference(inputs), bench.rtol, bench.atol)


def test_named_pairs_keep_meaning_the_nodes_they_were_fused_into():
    three = CHAIN.replace("  out offset.b -> b\n", "  node clamp = @clamp [N]\n"
                          "  edge offset.b -> clamp.b all-to-all\n  out clamp.c -> b\n").replace(
        "graph @main", "func @clamp(in b: f32[N], out c: f32[N]) {\n  let i: i64 = instance_id(0)\n"
        "  c[i] = max(b[i], f32(0.0))\n}\n\ngraph @main")
    module = parse_module(three)
    assert fusible_pairs(module) == ["scale:offset", "offset:clamp"]
    for pairs in ("scale:offset,offset:clamp", "offset:clamp,scale:offset"):
        text = fused(three, "{pairs=" + pairs + "}")
        assert text.count("node ") == 1, text
        inputs = {"a": np.linspace(-2, 2, 8, dtype=np.float32), "bias": np.array([0.5], np.float32)}
        assert_outputs_close(Interpreter(parse_module(text)).run(**inputs),
                             Interpreter(module).run(**inputs), label=pairs)


def test_fused_names_do_not_depend_on_the_hash_seed():
    """The same program fuses to the same text in every process (compile
    caches are keyed by it)."""
    import os
    import subprocess
    script = ("import sys; sys.path.insert(0, '.'); from benchmarks.suite import get; "
              "from hpvm.passes import run_pipeline; from hpvm.ir.text import print_module; "
              "print(print_module(run_pipeline(get('edge').build(), 'node-fusion,dce')))")
    texts = {subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed}
                            ).stdout for seed in ("1", "3")}
    assert len(texts) == 1
