"""The programs shipped with the conformance kit."""
from pathlib import Path

import pytest

from hpvm.ir.text import print_module
from hpvm.ir.verify import verify
from hpvm_sdk.conformance.programs import CORPUS, EXAMPLES, by_name

REPO_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ir"


@pytest.mark.parametrize("program", EXAMPLES + CORPUS, ids=str)
def test_program_verifies_and_is_in_canonical_text_form(program):
    module = program.load()
    verify(module)
    assert print_module(module) == program.text()


@pytest.mark.parametrize("program", EXAMPLES, ids=str)
def test_shipped_examples_are_the_repository_s_examples(program):
    original = REPO_EXAMPLES / f"{program.name}.hpvm"
    if not original.exists():
        pytest.skip("no repository checkout next to this hpvm-sdk")
    assert program.text() == original.read_text(), (
        f"copy {original} to sdk/hpvm_sdk/conformance/programs/examples/")


def test_every_repository_example_is_shipped():
    if not REPO_EXAMPLES.is_dir():
        pytest.skip("no repository checkout next to this hpvm-sdk")
    assert {p.stem for p in REPO_EXAMPLES.glob("*.hpvm")} == {p.name for p in EXAMPLES}


@pytest.mark.parametrize("program", EXAMPLES + CORPUS, ids=str)
def test_inputs_cover_every_readable_parameter(program):
    graph = program.load().root_graph
    assert set(program.inputs()) == {p.name for p in graph.params if p.reads}


def test_unknown_program_names_the_known_ones():
    with pytest.raises(LookupError, match="saxpy"):
        by_name("nope")
