"""The HPVM optimisations composed: random legal combinations of
node-fusion, stencil-fusion, loop-fusion, loop-unroll (factors), argument-privatisation,
inline, sequentialize, parallel-reduce (both forms), tile (both forms),
const-fold and dce on every corpus program and every benchmark program;
each result must
equal the reference (the interpreter on the original module, or the
benchmark's numpy reference) on every usable scalar target (interp, cpu, gpu_opencl)."""
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.passes import run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS
STEPS = ["node-fusion", "stencil-fusion{max_loads=100}", "loop-fusion", "loop-unroll{factor=2}", "loop-unroll{factor=3}",
         "argument-privatisation", "inline", "sequentialize", "const-fold", "dce",
         "parallel-reduce{lanes=4}", "parallel-reduce{form=chunks lanes=3}",
         "tile{size=4}", "tile{form=stencil size=3 halo=2}"]
LAST = ("sequentialize", "parallel-reduce", "tile")


def random_pipeline(seed: str) -> str:
    chooser = random.Random(seed)
    steps = chooser.sample(STEPS, chooser.randint(2, 5))
    # sequentialize leaves one instance per node; run it late so that
    # fusion still sees replicated nodes when it is chosen; parallel-reduce
    # after it (sequentialize refuses the barriers of its tree form), tile
    # last (it takes nodes no other pass gave a work group).
    steps.sort(key=lambda step: next((i + 1 for i, name in enumerate(LAST)
                                      if step.startswith(name)), 0))
    return ",".join(steps)


def check(module, inputs, expected, rtol, atol, seed):
    pipeline = random_pipeline(seed)
    optimised = run_pipeline(module, pipeline, verify_each=True)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(optimised, [target])(**inputs), expected, rtol, atol,
                             f"{module.name} after {pipeline} on {target}")


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_random_optimisations_keep_corpus_programs_correct(program):
    module = program.build()
    inputs = program.make_inputs(np.random.default_rng(11))
    check(module, inputs, Interpreter(module).run(**inputs), max(program.rtol, 1e-4),
          max(program.atol, 1e-5), program.name)


def benchmarks():
    sys.path.insert(0, str(ROOT))
    from benchmarks.suite import all_benchmarks
    return all_benchmarks()


@pytest.mark.parametrize("bench", benchmarks(), ids=lambda b: b.name)
def test_random_optimisations_keep_benchmark_programs_correct(bench):
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    check(bench.build(), inputs, bench.reference(inputs), bench.rtol, bench.atol, bench.name)
