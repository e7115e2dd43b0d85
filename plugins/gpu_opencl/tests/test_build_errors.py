"""An OpenCL build error names the generated line and the IR behind it."""
from pathlib import Path

import pytest

import hpvm.runtime as rt
from hpvm.errors import TargetError
from hpvm.ir.text import load_module
from hpvm_opencl.renderer import OpenCLRenderer

MATMUL = Path(__file__).resolve().parents[3] / "examples" / "ir" / "matmul.hpvm"


def test_build_error_shows_source_line_node_and_ir_statement(monkeypatch):
    original = OpenCLRenderer.store_element

    def broken(self, binding, index, value):
        return original(self, binding, index, value).replace(";", " + undefined_name;")

    monkeypatch.setattr(OpenCLRenderer, "store_element", broken)
    with pytest.raises(TargetError) as error:
        rt.compile(load_module(MATMUL), targets=["gpu_opencl"])
    message = str(error.value)
    assert "undefined_name" in message                       # the compiler's complaint
    assert "kernels.cl:" in message and (
        "c[((HPVM_INDEX)i) * (HPVM_INDEX)hpvm_c_d1 + (HPVM_INDEX)j] = acc + undefined_name;" in message)
    assert "node(s) @main.mm, function '@matmul': c[i, j] = acc" in message
