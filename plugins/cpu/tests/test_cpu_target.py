"""The cpu target against the reference interpreter on the example modules."""
from pathlib import Path

import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import load_module
from hpvm.runtime import Executable
from hpvm.testing import (assert_outputs_close, check_against_interpreter, random_inputs,
                          stream_inputs)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ir"
SIZES = {"H": 13, "W": 17, "N": 3, "M": 9, "K": 11}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}  # f32; LLVM may contract a*b+c into an FMA


def batch_examples():
    return [p for p in sorted(EXAMPLES.glob("*.hpvm")) if not load_module(p).root_graph.is_streaming]


@pytest.mark.parametrize("path", batch_examples(), ids=lambda p: p.stem)
def test_examples_match_the_interpreter(path):
    module = load_module(path)
    exe = check_against_interpreter(module, random_inputs(module.root_graph, SIZES), ["cpu"],
                                    **TOLERANCE)
    assert set(exe.placement.targets.values()) == {"cpu"}


def test_streaming_example_matches_the_interpreter():
    module = load_module(EXAMPLES / "pipeline.hpvm")
    fixed, frames = stream_inputs(module.root_graph, random_inputs(module.root_graph, SIZES), 10)
    check_against_interpreter(module, fixed, ["cpu"], frames, **TOLERANCE)


def test_saved_cpu_executables_load_and_run(tmp_path):
    module = load_module(EXAMPLES / "matmul.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    rt.compile(module, targets=["cpu"]).save(tmp_path / "mm.hpvmx")
    loaded = Executable.load(tmp_path / "mm.hpvmx")
    assert_outputs_close(loaded(**inputs), run_module(module, inputs), **TOLERANCE)


def test_running_what_was_just_compiled_neither_parses_nor_generates_code_again(monkeypatch):
    import hpvm.ir.text as text
    from hpvm_cpu.codegen import compiler
    module = load_module(EXAMPLES / "matmul.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    exe = rt.compile(module, targets=["cpu"])

    def refused(*args, **kwargs):
        raise AssertionError("the artifact's module or machine code was made again")

    monkeypatch.setattr(text, "parse_module", refused)
    monkeypatch.setattr(compiler, "load_optimised_ir", refused)
    assert_outputs_close(exe(**inputs), run_module(module, inputs), **TOLERANCE)


def test_loading_a_saved_executable_reads_the_machine_code_its_compile_cached(
        tmp_path, monkeypatch):
    from hpvm_cpu.codegen import compiler
    monkeypatch.setenv("HPVM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiler, "_compiled", {})
    module = load_module(EXAMPLES / "matmul.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    rt.compile(module, targets=["cpu"]).save(tmp_path / "mm.hpvmx")

    def refused(*args, **kwargs):
        raise AssertionError("LLVM ran again for code the compile had cached")

    monkeypatch.setattr(compiler, "compile_llvm_ir", refused)
    loaded = Executable.load(tmp_path / "mm.hpvmx")
    assert loaded.artifacts["cpu"].live == {}
    assert_outputs_close(loaded(**inputs), run_module(module, inputs), **TOLERANCE)


def test_cross_compiled_artifacts_hold_object_code_and_refuse_to_run_here(tmp_path):
    module = load_module(EXAMPLES / "matmul.hpvm")
    exe = rt.compile(module, targets=["cpu"], options={"triple": "aarch64-linux-gnu"})
    assert exe.artifacts["cpu"].files["kernels.o"][:4] == b"\x7fELF"
    with pytest.raises(Exception, match="aarch64"):
        exe(**random_inputs(module.root_graph, SIZES))


def test_large_products_run_through_blas_and_small_ones_as_kernels():
    import numpy as np
    from hpvm.ir.tensor_ops import TENSOR_OPS
    from hpvm.ir.tensor_ops.testing import single_op_module
    rng = np.random.default_rng(0)
    for size, blas in ((8, False), (256, True)):
        inputs = {"a": rng.standard_normal((size, size), dtype=np.float32),
                  "b": rng.standard_normal((size, size), dtype=np.float32)}
        module = single_op_module("matmul", inputs, {})
        for option in (True, False):
            exe = rt.compile(module, ["cpu"], {"cpu": {"blas": option}})
            kernels = exe.artifacts["cpu"].metadata["kernels"]
            assert bool(kernels) == (not (blas and option)), (size, option)
            np.testing.assert_allclose(exe(**inputs)["y"],
                                       TENSOR_OPS["matmul"].evaluate(inputs, {})["y"],
                                       rtol=1e-4, atol=1e-3)
