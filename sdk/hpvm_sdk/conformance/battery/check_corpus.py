"""Differential corpus: small programs, each stressing one corner of the
kernel language, compiled for the target compute what the interpreter
computes (integers exactly, floats within tolerance)."""
import pytest

from hpvm_sdk.conformance.programs import CORPUS


@pytest.mark.parametrize("program", CORPUS, ids=str)
def test_corpus_program_matches_the_interpreter(hpvm_target, program):
    hpvm_target.check_program(program)
