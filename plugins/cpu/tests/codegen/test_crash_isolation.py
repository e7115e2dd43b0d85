"""LLVM runs in the compile worker: a real LLVM assertion failure (the loop
vectoriser's "VPlan cost model and legacy cost model disagreed" on the
znver4 CPU model, kept as the unoptimised IR that provoked it) ends that
worker, not this process, and a safer pipeline compiles the kernel."""
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.errors import TargetError
from hpvm_cpu.codegen import compiler, pipeline as pipelines
from hpvm_cpu.codegen.machine import MachineSpec
from hpvm_cpu.codegen.pipeline import Pipeline, compile_llvm_ir

ASSERTING_IR = (Path(__file__).parent.parent / "data" / "loop_vectorizer_assertion.ll").read_text()
ZNVER4 = MachineSpec.for_model("znver4")


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    monkeypatch.delenv("HPVM_COMPILE_IN_PROCESS", raising=False)


def test_an_llvm_assertion_is_a_target_error_naming_the_kernel_and_pipeline():
    with pytest.raises(TargetError) as error:
        compile_llvm_ir(ASSERTING_IR, ZNVER4, "kernel '@softmax'", pipelines=[Pipeline()])
    message = str(error.value)
    assert "kernel '@softmax'" in message and "O3 for znver4" in message
    assert "aborted (SIGABRT)" in message and "VPlan cost model" in message


def test_after_an_llvm_assertion_the_next_pipeline_compiles_the_kernel():
    code = compile_llvm_ir(ASSERTING_IR, ZNVER4, "kernel '@softmax'")
    assert code.pipeline == "O3, no loop vectoriser for znver4"
    [note] = code.notes
    assert note.startswith("kernel '@softmax': LLVM aborted (SIGABRT)")
    assert note.endswith("compiled with O3, no loop vectoriser for znver4 instead")
    assert code.object_code[:4] == b"\x7fELF"


MATMUL = Path(__file__).resolve().parents[4] / "examples" / "ir" / "matmul.hpvm"


def test_a_crashing_pipeline_is_reported_in_the_placement_and_the_program_runs(
        monkeypatch, tmp_path):
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_compiled", {})  # nothing compiled before counts
    monkeypatch.setattr(pipelines, "EMITTER",
                        "hpvm_cpu.codegen.testing:emit_aborting_with_the_loop_vectorizer")
    exe = hpvm.compile(MATMUL, targets=["cpu"])
    [note] = exe.placement.notes
    assert note.startswith("cpu: kernel '@") and "aborted (SIGABRT)" in note
    assert "no loop vectoriser" in exe.placement.format()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(exe(a=a, b=b)["c"], a @ b)
