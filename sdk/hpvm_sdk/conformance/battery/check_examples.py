"""Example programs: the repository's examples/ir modules (matrix product,
blur with a hint, a hierarchy, a tiny LeNet of tensor ops, a streaming
pipeline) compiled for the target compute what the interpreter computes."""
import pytest

from hpvm_sdk.conformance.programs import EXAMPLES


@pytest.mark.parametrize("program", EXAMPLES, ids=str)
def test_example_program_matches_the_interpreter(hpvm_target, program):
    hpvm_target.check_program(program)
