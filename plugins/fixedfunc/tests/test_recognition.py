"""fixedfunc recognises MachSuite's fft, viterbi and gemm unmodified and
independently written variants of them, runs them on its accelerators with
the interpreter's results, and refuses near misses saying which pattern was
tried and why it failed."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import run_module
from hpvm.ir.text import parse_module, print_module
from hpvm_fixedfunc.recognise import nearest_first, recognise

from benchmarks.programs import ms_fft, ms_gemm, ms_viterbi

variants = load_python_file(Path(__file__).with_name("variants.py"))


def built(program) -> hpvm.ir.Module:
    return program if isinstance(program, hpvm.ir.Module) else program.build()


def claims(program) -> dict:
    module = built(program)
    found = {}
    for graph in module.graphs.values():
        found.update(recognise(module, graph).claims)
    return found


def misses(module) -> dict:
    found = {}
    for graph in module.graphs.values():
        found.update({n: [str(r) for r in reasons] for n, reasons in recognise(module, graph).misses.items()})
    return found


@pytest.mark.parametrize("program, signature, members, convention", [
    (ms_fft.ms_fft, "fft", 10, {"order_in": "natural", "order_out": "bit-reversed", "sign": -1}),
    (ms_viterbi.ms_viterbi, "viterbi", 1, {"transition": "prev,curr", "emission": "state,token"}),
    (ms_gemm.ms_gemm, "gemm", 1, {"first": "a", "transpose_first": False, "transpose_second": False}),
    (variants.fft_dit_inline_twiddles, "fft", 1, {"order_in": "bit-reversed", "order_out": "natural"}),
    (variants.fft_dif_tables, "fft", 1, {"order_in": "natural", "order_out": "bit-reversed"}),
    (variants.fft_stockham(), "fft", 4, {"order_in": "natural", "order_out": "natural", "max_points": 16}),
    (variants.viterbi_transposed, "viterbi", 1, {"transition": "curr,prev", "emission": "token,state"}),
    (variants.viterbi_single, "viterbi", 1, {"transition": "prev,curr", "emission": "state,token"}),
    (variants.gemm_transposed, "gemm", 1, {"first": "b", "transpose_second": True}),
    (variants.fir_filter, "fir", 1, {"mode": "convolve"}),
], ids=lambda value: getattr(value, "name", None))
def test_kernels_are_recognised_with_their_convention(program, signature, members, convention):
    found = claims(program)
    assert found, misses(built(program))
    (claim,) = {c.members: c for c in found.values()}.values()
    assert claim.signature == signature
    assert len(claim.members) == members
    assert convention.items() <= claim.convention.items()


def run_both(program, inputs):
    """(fixedfunc's outputs, the interpreter's) on copies of ``inputs``."""
    exe = hpvm.compile(program, targets=["fixedfunc"])
    assert set(exe.placement.targets.values()) == {"fixedfunc"}, exe.placement.format()
    actual = exe(**{k: np.copy(v) for k, v in inputs.items()})
    expected = run_module(built(program), {k: np.copy(v) for k, v in inputs.items()})
    return actual, expected


@pytest.mark.parametrize("bench", [ms_fft.BENCHMARKS[0], ms_viterbi.BENCHMARKS[0], ms_gemm.BENCHMARKS[0]],
                         ids=lambda b: b.name)
def test_machsuite_programs_run_on_the_accelerators_as_on_the_interpreter(bench):
    inputs = bench.make_inputs("small", np.random.default_rng(3))
    actual, expected = run_both(bench.program, inputs)
    for key in expected:
        np.testing.assert_allclose(actual[key], expected[key], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("program, make, fft", [
    (variants.fft_dit_inline_twiddles, variants.make_fft_dit, variants.expected_fft_dit),
    (variants.fft_dif_tables, variants.make_fft_dif, variants.expected_fft_dif),
    (variants.fft_stockham(), variants.make_fft_stockham, variants.expected_fft_stockham),
], ids=lambda value: getattr(value, "name", None))
def test_fft_variants_compute_the_fft(program, make, fft):
    inputs = make(np.random.default_rng(4))
    actual, expected = run_both(program, inputs)
    for key, value in fft(inputs).items():
        np.testing.assert_allclose(expected[key], value, rtol=1e-10, atol=1e-10)   # the kernel is an FFT
        np.testing.assert_allclose(actual[key], value, rtol=1e-10, atol=1e-10)


def test_the_transposed_viterbi_decodes_as_the_interpreter():
    model = variants.make_viterbi(np.random.default_rng(5))
    inputs = {"observations": model["obs"], "start": model["init"], "moves": model["transition"].T.copy(),
              "emits": model["emission"].T.copy()}
    actual, expected = run_both(variants.viterbi_transposed, inputs)
    np.testing.assert_array_equal(actual["states"], expected["states"])
    np.testing.assert_allclose(actual["cost"], expected["cost"], rtol=1e-12)
    np.testing.assert_array_equal(actual["states"], ms_viterbi.reference(model)["path"])


def test_the_single_sequence_viterbi_decodes_as_the_interpreter():
    model = variants.make_viterbi(np.random.default_rng(7), sequences=1, steps=12)
    inputs = {"tokens": model["obs"][0].astype(np.int32), "prior": model["init"], "trans": model["transition"],
              "emit": model["emission"]}
    actual, expected = run_both(variants.viterbi_single, inputs)
    np.testing.assert_array_equal(actual["best_path"], expected["best_path"])
    np.testing.assert_array_equal(actual["best_path"], ms_viterbi.reference(model)["path"][0])


def test_gemm_and_fir_variants_compute_as_the_interpreter():
    rng = np.random.default_rng(6)
    actual, expected = run_both(variants.gemm_transposed, {"left": rng.uniform(-1, 1, (7, 5)),
                                                           "right_t": rng.uniform(-1, 1, (6, 5))})
    np.testing.assert_allclose(actual["product"], expected["product"], rtol=1e-12)
    signal, taps = rng.uniform(-1, 1, (2, 30)), rng.uniform(-1, 1, 4)
    actual, expected = run_both(variants.fir_filter, {"signal": signal, "taps": taps, "M": 27})
    np.testing.assert_allclose(actual["filtered"], expected["filtered"], rtol=1e-12)


def test_a_program_mixes_accelerated_and_plain_nodes():
    rng = np.random.default_rng(8)
    inputs = {"a": rng.uniform(-1, 1, (9, 9)), "b": rng.uniform(-1, 1, (9, 9))}
    exe = hpvm.compile(variants.product_then_scale, targets=["fixedfunc"])   # the rest falls back to cpu
    placed = exe.placement.targets
    assert placed["@product_then_scale.product"] == "fixedfunc"
    assert placed["@product_then_scale.scale"] == "cpu"
    assert "fixedfunc: no accelerator signature fits" in exe.placement.reasons["@product_then_scale.scale"]
    np.testing.assert_allclose(exe(**inputs)["out"], 2 * inputs["a"] @ inputs["b"], rtol=1e-12)


# -- near misses -------------------------------------------------------------------
def mutated(program, old: str, new: str, count: int = -1):
    text = print_module(program.build())
    assert old in text
    return parse_module(text.replace(old, new, count))


WRONG_TWIDDLE_SIGN = ("real_twid[root] * real_odd - img_twid[root] * img_odd",
                      "real_twid[root] * real_odd + img_twid[root] * img_odd")
SWAPPED_OUTPUTS = ("real[b, even] = real_even + real_odd", "real[b, even] = real_even - real_odd")


@pytest.mark.parametrize("old, new, why", [
    (*WRONG_TWIDDLE_SIGN, "no negated product -(im*wi) of the difference and the twiddle"),
    (*SWAPPED_OUTPUTS, "no "),
])
def test_a_mutated_fft_stage_is_refused_with_the_missing_operation(old, new, why):
    module = mutated(ms_fft.ms_fft, old, new, count=1)   # only the first stage
    assert claims(module) == {}
    first_stage = misses(module)["fft_stage"]
    assert any(reason.startswith("fft (decimation in frequency): ") and why in reason for reason in first_stage)
    # the other stages match, but nine stages are not an FFT of N points
    assert "structure matched, but on a probe" in misses(module)["fft_stage_1"][0]


def test_an_off_by_one_trellis_index_is_refused_by_the_probe():
    module = mutated(ms_viterbi.ms_viterbi, "transition[prev, curr]", "transition[prev - 1, curr]")
    assert claims(module) == {}
    (reason, *_) = misses(module)["viterbi"]
    assert reason.startswith("viterbi (add-compare-select and traceback): structure matched, but on a probe")
    assert "differ from the viterbi accelerator's in every convention" in reason


def test_a_traceback_keeping_the_last_minimum_is_refused():
    module = mutated(ms_viterbi.ms_viterbi, "      if p < min_p {\n        min_p = p\n        min_s = s_2",
                     "      if p <= min_p {\n        min_p = p\n        min_s = s_2")
    assert claims(module) == {}
    (nearest, *_) = nearest_first(recognise(module, module.root_graph).misses["viterbi"])
    assert str(nearest).startswith("viterbi (add-compare-select and traceback): no ")


def test_a_sum_not_starting_from_zero_is_not_a_gemm():
    module = mutated(ms_gemm.ms_gemm, "let total: f64 = 0.0", "let total: f64 = 1.0")
    assert claims(module) == {}
    assert "gemm (dot product per element): the sum does not start from zero" in misses(module)["gemm"]


def test_the_plan_says_which_pattern_was_tried_and_why_it_failed(tmp_path, capsys):
    from hpvm.cli import main
    source = tmp_path / "fft.hpvm"
    source.write_text(print_module(mutated(ms_fft.ms_fft, *WRONG_TWIDDLE_SIGN, count=1)))
    assert main(["plan", str(source), "--targets", "fixedfunc"]) == 0
    report = capsys.readouterr().out
    (line,) = [row for row in report.splitlines() if row.startswith("@ms_fft.fft_stage ")]
    assert "fixedfunc: no accelerator signature fits: fft (decimation in frequency): no negated product" in line
