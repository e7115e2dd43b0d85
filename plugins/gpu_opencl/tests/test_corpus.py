"""Every program of the differential corpus (tests/corpus) on gpu_opencl
against the reference interpreter and the program's numpy reference."""
from pathlib import Path

import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter

PROGRAMS = Path(__file__).resolve().parents[3] / "tests" / "corpus" / "programs.py"
CORPUS = load_python_file(PROGRAMS).CORPUS if PROGRAMS.exists() else []


def run(runner, program, inputs, frames):
    if frames is None:
        return [runner(**inputs) if callable(runner) else runner.run(**inputs)]
    runner.start(**inputs)
    for frame in frames:
        runner.push(**frame)
    results = [runner.pop() for _ in frames]
    runner.close()
    return results


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_program_matches_the_interpreter(program):
    module = program.build()
    rng = np.random.default_rng(1)
    inputs = program.make_inputs(rng)
    frames = program.make_frames(rng) if program.make_frames else None
    expected = run(Interpreter(module), program, inputs, frames)  # first: it checks bounds
    exe = rt.compile(module, targets=["gpu_opencl"])
    got = run(exe, program, inputs, frames)
    for result, reference in zip(got, expected):
        for name, value in reference.items():
            np.testing.assert_allclose(result[name], value, rtol=max(program.rtol, 1e-5),
                                       atol=max(program.atol, 1e-6),
                                       err_msg=f"{program.name}: output '{name}'")
