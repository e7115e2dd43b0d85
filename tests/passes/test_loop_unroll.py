"""loop-unroll: loops unrolled by a factor (main loop of copies plus a
remainder) or completely, per loop, by hint or by default factor; illegal
requests refused with the reason; every corpus program keeps its results
under random unroll factors, on every usable scalar target (interp, cpu,
gpu_opencl)."""
import random
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.loop_unroll import loop_ids
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """hpvm 1.0
module m

func @k(in x: f32[N, K], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for k in 0 .. K step 1 {
    let v: f32 = x[i, k]
    acc = acc + v * v
  }
  for r in 0 .. 3 step 1 HINT{
    acc = acc + f32(r)
  }
  y[i] = acc
}

graph @main(in x: f32[N, K], out y: f32[N]) {
  node a = @k [N]
  in x -> a.x
  out a.y -> y
}

root @main
"""


def module(hint: str = ""):
    return parse_module(PROGRAM.replace("HINT", hint))


def body_of(unrolled) -> str:
    text = print_module(unrolled)
    return text[text.index("{") + 1:text.index("\ngraph")]


def test_a_loop_is_strip_mined_into_copies_and_a_remainder():
    text = body_of(run_pipeline(module(), "loop-unroll{loops=k.k:2}"))
    assert text == """
  let i: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for k in 0 .. select(K >= 0, K / 2 * 2, 0) step 2 {
    let v_1: f32 = x[i, k]
    acc = acc + v_1 * v_1
    let v_2: f32 = x[i, k + 1]
    acc = acc + v_2 * v_2
  }
  for k in select(K >= 0, K / 2 * 2, 0) .. K step 1 [unroll = 1] {
    let v: f32 = x[i, k]
    acc = acc + v * v
  }
  for r in 0 .. 3 step 1 {
    acc = acc + f32(r)
  }
  y[i] = acc
}
"""


STRIDED = """hpvm 1.0
module m

func @k(in x: f32[K], in start: f32[L], out y: f32[L]) {
  let lane: i64 = instance_id(0)
  let acc: f32 = start[lane]
  for k in lane .. K step 4 {
    acc = acc + x[k]
  }
  y[lane] = acc
}

graph @main(in x: f32[K], in start: f32[L], out y: f32[L]) {
  node a = @k [L]
  in x -> a.x
  in start -> a.start
  out a.y -> y
}

root @main
"""


def test_a_strided_loop_keeps_every_whole_group_of_copies_in_the_main_loop():
    """A lane's loop over every 4th element from its lane: the groups of
    two copies are ceil(span / 4) // 2, not span // 8 (which left a
    whole group to the remainder), and every lane sums the same
    elements as written."""
    unrolled = run_pipeline(parse_module(STRIDED), "loop-unroll{loops=k.k:2}")
    assert "for k in lane .. select(K - lane >= 0, lane + (K - lane + 3) / 8 * 8, lane) step 8" \
        in print_module(unrolled)
    for count in (0, 1, 5, 8, 13, 16, 31):
        inputs = {"x": np.arange(1, count + 1, dtype=np.float32),
                  "start": np.full(4, 0.5, np.float32)}
        expected = Interpreter(parse_module(STRIDED)).run(**inputs)
        np.testing.assert_array_equal(Interpreter(unrolled).run(**inputs)["y"], expected["y"])


def test_a_loop_with_constant_bounds_is_unrolled_completely():
    text = body_of(run_pipeline(module(), "loop-unroll{loops=k.r:full}"))
    assert "for r" not in text
    assert "acc = acc + f32(0.0)\n  acc = acc + f32(1.0)\n  acc = acc + f32(2.0)" in text


@pytest.mark.parametrize("hint, unrolled", [("[unroll = 3] ", True), ("[unroll = 1] ", False)])
def test_hints_choose_the_factor_without_a_request(hint, unrolled):
    text = body_of(run_pipeline(module(hint), "loop-unroll"))
    assert ("for r" not in text) == unrolled


def test_the_default_factor_applies_to_loops_without_a_hint():
    text = body_of(run_pipeline(module(), "loop-unroll{factor=4}"))
    assert "step 4" in text and "for r" not in text  # 3 iterations <= 4: complete


@pytest.mark.parametrize("request_, message", [
    ("k.k:full", "loop 'k.k' has bounds that are not constants"),
    ("k.q:2", "no loop 'k.q' (fix: the loops are: k.k, k.r)"),
    ("k.k=2", "'k.k=2' is not FUNCTION.VAR[#N]:FACTOR"),
])
def test_illegal_requests_are_refused_with_the_reason(request_, message):
    with pytest.raises(PassError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        run_pipeline(module(), f"loop-unroll{{loops='{request_}'}}")


def test_a_loop_whose_bound_the_body_changes_is_refused():
    text = PROGRAM.replace("for k in 0 .. K step 1 {", "let n: i64 = K\n  for k in 0 .. n step 1 {"
                           ).replace("acc = acc + v * v", "acc = acc + v * v\n    n = n - 1")
    with pytest.raises(PassError, match="has a bound that the body changes \\(n\\)"):
        run_pipeline(parse_module(text.replace("HINT", "")), "loop-unroll{loops=k.k:2}")
    # without a request the loop is left to the back end
    assert "for k in 0 .. n step 1 {" in print_module(
        run_pipeline(parse_module(text.replace("HINT", "")), "loop-unroll{factor=2}"))


def test_growth_past_max_statements_is_refused():
    with pytest.raises(PassError, match="would grow to 8 statements, more than max_statements=5"):
        run_pipeline(module(), "loop-unroll{loops=k.k:4, max_statements=5}")


CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_random_unroll_factors_keep_every_corpus_program_correct(program):
    original = program.build()
    ids = [loop_id for function in original.functions.values() for loop_id in loop_ids(function)]
    if not ids:
        pytest.skip("no loops")
    chooser = random.Random(program.name)
    rng = np.random.default_rng(3)
    inputs = program.make_inputs(rng)
    frames = program.make_frames(rng) if program.make_frames else None
    if frames is not None:
        pytest.skip("streaming programs are covered by their batch twins")
    expected = Interpreter(original).run(**inputs)
    for trial in range(3):
        factor = chooser.choice([0, 2, 3, 4])
        requests = [f"{loop_id}:{chooser.choice(['2', '3', '5', 'full'])}"
                    for loop_id in ids if chooser.random() < 0.5]
        try:
            unrolled = run_pipeline(original, f"loop-unroll{{factor={factor}, "
                                              f"loops='{','.join(requests)}'}}", verify_each=True)
        except PassError:  # a request that is not legal for that loop: the pass said why
            unrolled = run_pipeline(original, f"loop-unroll{{factor={factor}}}", verify_each=True)
        for target in usable_targets():
            actual = hpvm.compile(unrolled, targets=[target])(**inputs)
            assert_outputs_close(actual, expected, max(program.rtol, 1e-4), max(program.atol, 1e-5),
                                 f"{program.name} on {target}, factor {factor}, {requests}")
