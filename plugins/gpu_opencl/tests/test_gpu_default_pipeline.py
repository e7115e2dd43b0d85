"""The default pipeline a GPU gets (stencil and register tiles, chunked and
tree reductions, latency-unroll, fusions out of place, copies not made)
and the GPU's launch defaults (several instances a work item), run on
whatever OpenCL device is here (PoCL on a host without a GPU), compute
every suite program's numpy reference and every corpus program's
interpreter results: what the lent GPUs time is checked on every host."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.interp import Interpreter
from hpvm.testing import assert_outputs_close

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from benchmarks.suite import all_benchmarks  # noqa: E402

CORPUS = load_python_file(ROOT / "tests" / "corpus" / "programs.py").CORPUS

@pytest.fixture
def as_on_a_gpu(monkeypatch):
    """The gpu_opencl target deciding as it does on a GPU."""
    import hpvm_gpu_opencl.target as target
    monkeypatch.setattr(target, "on_gpu", lambda options: True)
    return target.GpuOpenCLTarget().default_pipeline


@pytest.mark.parametrize("bench", all_benchmarks(), ids=lambda b: b.name)
def test_every_program_through_the_gpus_default_pipeline_matches_its_reference(bench,
                                                                              as_on_a_gpu):
    assert "register-tile{form=group" in as_on_a_gpu
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    exe = hpvm.compile(bench.program, ["gpu_opencl"], {"pipeline": as_on_a_gpu})
    got = exe(**{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()})
    assert_outputs_close(got, bench.reference(inputs), bench.rtol, bench.atol,
                         f"{bench.name} through {as_on_a_gpu}")


@pytest.mark.parametrize("program", [p for p in CORPUS if p.make_frames is None],
                         ids=lambda p: p.name)
def test_every_corpus_program_through_the_gpus_default_pipeline_matches_the_interpreter(
        program, as_on_a_gpu):
    module = program.build()
    inputs = program.make_inputs(np.random.default_rng(5))
    got = hpvm.compile(module, ["gpu_opencl"], {"pipeline": as_on_a_gpu})(**inputs)
    assert_outputs_close(got, Interpreter(module).run(**inputs), max(program.rtol, 1e-4),
                         max(program.atol, 1e-5), f"{program.name} through {as_on_a_gpu}")
