"""Buffer indices in 32-bit arithmetic where every buffer of a launch fits,
in 64-bit (a second program, built when first needed) where one does not."""
from pathlib import Path

import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import load_module
from hpvm.testing import assert_outputs_close, random_inputs
from hpvm_opencl import memory as opencl_memory
from hpvm_opencl import program as opencl_program

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ir"
SIZES = {"H": 13, "W": 17, "N": 3, "M": 9, "K": 11}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture
def builds(monkeypatch):
    """The index type of every program built (from its -D flag)."""
    seen = []
    original = opencl_program.build_program

    def recording(runtime, source, flags, explain_line=None):
        seen.extend(f.split("=")[1] for f in flags if f.startswith("-DHPVM_INDEX="))
        return original(runtime, source, flags, explain_line)

    monkeypatch.setattr(opencl_program, "build_program", recording)
    return seen


def _compile_and_run(name: str) -> None:
    module = load_module(EXAMPLES / f"{name}.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    exe = rt.compile(module, targets=["gpu_opencl"])
    assert_outputs_close(exe(**inputs), run_module(module, inputs), **TOLERANCE)


@pytest.mark.parametrize("name", ["blur", "matmul"])
def test_buffers_that_int_counts_run_the_int_program_alone(name, builds):
    _compile_and_run(name)
    assert builds and set(builds) == {"int"}


@pytest.mark.parametrize("name", ["blur", "matmul"])
def test_a_buffer_larger_than_int_counts_runs_the_long_program(name, builds, monkeypatch):
    monkeypatch.setattr(opencl_memory, "NARROW_ELEMENTS", 20)   # every buffer here exceeds it
    _compile_and_run(name)
    assert builds[0] == "int" and "long" in builds


def test_the_source_defaults_to_long_indices_for_other_builds():
    module = load_module(EXAMPLES / "matmul.hpvm")
    source = rt.compile(module, targets=["gpu_opencl"]).artifacts["gpu_opencl"].files
    text = source["kernels.cl"].decode()
    assert "#ifndef HPVM_INDEX\n#define HPVM_INDEX long\n#endif" in text
    assert "c[((HPVM_INDEX)i) * (HPVM_INDEX)hpvm_c_d1 + (HPVM_INDEX)j]" in text


@pytest.mark.parametrize("name", ["blur", "matmul"])
def test_sizes_past_the_narrow_range_run_the_long_program(name, builds, monkeypatch):
    """Narrow values (narrowing.py) are computed for dimensions of at most
    NARROW_SIZE: a buffer or a replication longer than that runs the long
    program, and computes the same."""
    from hpvm_opencl import device as opencl_device
    monkeypatch.setattr(opencl_memory, "NARROW_SIZE", 5)
    monkeypatch.setattr(opencl_device, "NARROW_SIZE", 5)
    _compile_and_run(name)
    assert builds[0] == "int" and "long" in builds


def test_narrow_index_arithmetic_in_the_int_program_only():
    """A stencil's ids, neighbours and interior test compute in HPVM_INDEX:
    32-bit in the int program, 64-bit in the long one, the same values."""
    text = load_source("blur")
    assert "const HPVM_INDEX H = (HPVM_INDEX)hpvm_src_d0;" in text
    assert "HPVM_INDEX y = ((HPVM_INDEX)hpvm_id0);" in text
    assert "for (HPVM_INDEX d = (-1); d < 2; d += 1)" in text
    assert "HPVM_INDEX column = min((HPVM_INDEX)max((HPVM_INDEX)(x + d), (HPVM_INDEX)0), " \
           "(HPVM_INDEX)(W - 1));" in text


def load_source(name: str) -> str:
    module = load_module(EXAMPLES / f"{name}.hpvm")
    exe = rt.compile(module, targets=["gpu_opencl"])
    return exe.artifacts["gpu_opencl"].files["kernels.cl"].decode()
