"""Every corpus program on the reference interpreter against its numpy
reference (the other targets run the same list)."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import verify

CORPUS = load_python_file(Path(__file__).with_name("programs.py")).CORPUS


def run_on_interpreter(program, rng):
    """``(outputs, expected)`` lists for one program (one entry per frame
    for streaming programs)."""
    module = program.build()
    inputs = program.make_inputs(rng)
    interpreter = Interpreter(module)
    if program.make_frames is None:
        return [interpreter.run(**inputs)], [program.reference(inputs)]
    frames = program.make_frames(rng)
    interpreter.start(**inputs)
    for frame in frames:
        interpreter.push(**frame)
    return [interpreter.pop() for _ in frames], [program.reference({**inputs, **f}) for f in frames]


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_interpreter_matches_numpy_reference(program):
    outputs, expected = run_on_interpreter(program, np.random.default_rng(1))
    for got, want in zip(outputs, expected):
        assert set(want) <= set(got)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=program.rtol, atol=program.atol,
                                       err_msg=f"{program.name}: output '{name}'")


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_module_verifies_and_round_trips_as_text(program):
    module = program.build()
    verify(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text


def test_corpus_names_are_unique():
    names = [p.name for p in CORPUS]
    assert len(names) == len(set(names))
