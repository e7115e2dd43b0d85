"""Random points of fpga_aoc's design space (unrolled instance loops, input
buffering, the passes' parameters, task parallelism) on every corpus and
benchmark program against the interpreter and the programs' references:
the corpus in each emulator that works here, the benchmarks on the host
emulation (PoCL's compiler is slow on fully unrolled kernels)."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.testing import check_random_designs, usable_targets

ROOT = Path(__file__).resolve().parents[3]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
EMULATORS = ["host"] + (["opencl"] if "gpu_opencl" in usable_targets(("gpu_opencl",)) else [])


def benchmarks():
    from benchmarks.suite import all_benchmarks
    return all_benchmarks()


@pytest.mark.parametrize("emulator", EMULATORS)
@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_random_designs_keep_corpus_programs_correct(program, emulator):
    module = program.build()
    inputs = program.make_inputs(np.random.default_rng(5))
    check_random_designs(module, inputs, Interpreter(module).run(**inputs), ["fpga_aoc", "cpu"],
                         max(program.rtol, 1e-4), max(program.atol, 1e-5), program.name,
                         count=1, options={"fpga_aoc": {"emulator": emulator}})


@pytest.mark.parametrize("bench", benchmarks(), ids=lambda b: b.name)
def test_random_designs_keep_benchmark_programs_correct(bench):
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    check_random_designs(bench.build(), inputs, bench.reference(inputs), ["fpga_aoc", "cpu"],
                         bench.rtol, bench.atol, bench.name, count=1,
                         options={"fpga_aoc": {"emulator": "host"}})
