"""The differential corpus (tests/corpus) on the cpu target against the
reference interpreter."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.frontend.compile import load_python_file
from hpvm.testing import check_against_interpreter

CORPUS = load_python_file(Path(__file__).resolve().parents[3] / "tests" / "corpus"
                          / "programs.py").CORPUS


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_program_on_cpu_matches_the_interpreter(program):
    rng = np.random.default_rng(7)
    inputs = program.make_inputs(rng)
    frames = program.make_frames(rng) if program.make_frames else None
    exe = check_against_interpreter(program.build(), inputs, ["cpu"], frames,
                                    rtol=max(program.rtol, 1e-4), atol=max(program.atol, 1e-5))
    assert set(exe.placement.targets.values()) == {"cpu"}
