"""The cpu target for several LLVM CPU models, whatever this machine is:
the differential corpus (examples included) and onnx's in-scope node tests
(one per set of operators and input types) are compiled for each model,
and run against the interpreter (or onnx's expected outputs) where this
machine can run the model's code.  The
models cover AVX-512 on both x86 vendors, AVX2 and AArch64; LLVM runs in
the compile worker, so no model can kill the test process.

``$HPVM_CPU_MODEL`` runs every other cpu test for one model instead of this
machine's."""
import re
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.frontend.compile import load_python_file
from hpvm.testing import check_against_interpreter
from hpvm_cpu.codegen.machine import MachineSpec

MODELS = ("host", "x86-64-v3", "znver4", "sapphirerapids", "neoverse-v2")
CORPUS = load_python_file(Path(__file__).resolve().parents[3] / "tests" / "corpus"
                          / "programs.py").CORPUS
ELF_MACHINES = {"x86_64": 62, "aarch64": 183}


def model_options(model: str) -> tuple[dict, bool]:
    """(cpu options for ``model``, whether its code runs here): code that
    cannot run here is compiled to object code for the model's triple."""
    spec = MachineSpec.for_model(model)
    runs = spec.why_not_runnable() is None
    options = {"cpu_model": model} if runs else {"cpu_model": model, "triple": spec.triple}
    return {"cpu": options}, runs


def assert_object_code_for(exe, model: str) -> None:
    data = exe.artifacts["cpu"].files["kernels.o"]
    arch = MachineSpec.for_model(model).triple.split("-")[0]
    assert data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == ELF_MACHINES[arch]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.name)
def test_corpus_program_for_each_cpu_model(program, model):
    options, runs = model_options(model)
    if not runs:
        assert_object_code_for(hpvm.compile(program.build(), ["cpu"], options), model)
        return
    rng = np.random.default_rng(7)
    inputs = program.make_inputs(rng)
    frames = program.make_frames(rng) if program.make_frames else None
    check_against_interpreter(program.build(), inputs, ["cpu"], frames, options=options,
                              rtol=max(program.rtol, 1e-4), atol=max(program.atol, 1e-5))


def representative_onnx_cases() -> list:
    """(model, inputs, expected outputs, case) of the first in-scope onnx case
    of each set of operators (about 240 of the 1,675; tests/onnx_conformance
    runs them all on this machine's model)."""
    from hpvm.onnx_conformance import (
        in_scope_node_tests, operators, read_case, skipped_on_pattern,
    )
    skipped = skipped_on_pattern("cpu")
    chosen, seen = [], set()
    for case in in_scope_node_tests():
        if skipped and re.match(skipped, case.name + "_cpu"):
            continue
        model_proto, inputs, expected = read_case(case)
        kind = tuple(sorted(operators(model_proto)))
        if kind not in seen:
            seen.add(kind)
            chosen.append((model_proto, inputs, expected, case))
    return chosen


@pytest.mark.parametrize("model", [m for m in MODELS if m != "host"])
def test_onnx_node_tests_in_scope_for_each_cpu_model(model):
    """This machine's model ("host") runs every in-scope case in
    tests/onnx_conformance."""
    pytest.importorskip("onnx.backend.test")
    from hpvm.onnx_backend import backend_for
    options, runs = model_options(model)
    backend = backend_for("cpu", **options)
    wrong = []
    for model_proto, inputs, expected, case in representative_onnx_cases():
        if not runs:
            executable = backend.prepare(model_proto).compiled_for(inputs)[0]
            assert_object_code_for(executable, model)
            continue
        outputs = backend.run_model(model_proto, inputs)
        for actual, want in zip(outputs, expected):
            if not np.allclose(actual, want, rtol=1e-3, atol=1e-7, equal_nan=True):
                wrong.append(f"{case.name}: max error {np.max(np.abs(actual - want)):g}")
    assert not wrong, f"wrong results for CPU model {model}: " + "; ".join(wrong)


def test_zen_code_does_not_run_on_an_intel_machine_with_every_avx512_feature(monkeypatch):
    """LLVM lowers some shuffles to AMD's SSE4A for every Zen model: an
    Emerald Rapids has Zen 4's AVX-512 but not SSE4A (it ran into an
    illegal instruction)."""
    from hpvm_cpu.codegen import machine
    emerald_rapids = frozenset(machine.X86_MODEL_FEATURES["sapphirerapids"])
    monkeypatch.setattr(machine, "host_cpu", lambda: ("x86_64-unknown-linux-gnu",
                                                      "emeraldrapids", ""))
    monkeypatch.setattr(machine, "host_features", lambda: emerald_rapids)
    assert "sse4a" in MachineSpec.for_model("znver4").why_not_runnable()
    assert MachineSpec.for_model("icelake-server").why_not_runnable() is None
