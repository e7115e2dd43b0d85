"""The corpus (corpus/*.py): kernels written independently, each in its own
style, that fixedfunc must claim and run with their numpy reference's
results, and for each a near-miss mutant (one change: a wrong twiddle
sign or index, a swapped butterfly, an off-by-one recurrence ...) that it
must refuse with a reason naming what is missing."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.ir.text import parse_module, print_module
from hpvm_fixedfunc.recognise import recognise

CORPUS = Path(__file__).with_name("corpus")
SIGNATURES = ("fft", "viterbi", "gemm", "fir")
VARIANTS = [(signature, variant) for signature in SIGNATURES
            for variant in load_python_file(CORPUS / f"{signature}.py").VARIANTS]
IDS = [f"{signature}-{variant['name']}" for signature, variant in VARIANTS]


def module_of(program) -> hpvm.ir.Module:
    return program if isinstance(program, hpvm.ir.Module) else program.build()


def recognised(module):
    claims, misses = {}, {}
    for graph in module.graphs.values():
        result = recognise(module, graph)
        claims.update(result.claims)
        misses.update({node: [str(r) for r in reasons] for node, reasons in result.misses.items()})
    return claims, misses


@pytest.mark.parametrize("signature, variant", VARIANTS, ids=IDS)
def test_every_variant_is_claimed_and_computes_its_reference(signature, variant):
    module = module_of(variant["program"])
    claims, misses = recognised(module)
    assert claims and not misses, misses
    assert {claim.signature for claim in claims.values()} == {signature}
    inputs = variant["make"](np.random.default_rng(11))
    exe = hpvm.compile(module, targets=["fixedfunc"])
    assert set(exe.placement.targets.values()) == {"fixedfunc"}, exe.placement.format()
    outputs = exe(**{name: np.copy(value) for name, value in inputs.items()})
    for name, expected in variant["reference"](inputs).items():
        np.testing.assert_allclose(outputs[name], expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("signature, variant", VARIANTS, ids=IDS)
def test_every_mutant_is_refused_naming_what_is_missing(signature, variant):
    old, new, change, why = variant["mutant"]
    text = print_module(module_of(variant["program"]))
    assert old in text, f"the mutant's text is not in {variant['name']}"
    claims, misses = recognised(parse_module(text.replace(old, new)))
    assert not claims, f"{change}: claimed all the same"
    reasons = [reason for node in misses.values() for reason in node
               if reason.startswith(f"{signature} (")]
    assert any(why in reason for reason in reasons), (change, reasons)
