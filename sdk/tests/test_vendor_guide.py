"""The worked example of the vendor guide (sdk/README.md) works as printed:
its matcher, code generator and device, pasted into a generated target."""
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from hpvm.registry import Registry
from hpvm_sdk.conformance.harness import TargetUnderTest
from hpvm_sdk.conformance.programs import by_name
from hpvm_sdk.template import new_target

GUIDE = Path(__file__).resolve().parents[1] / "README.md"


def example_code(file: str) -> str:
    """The python block that follows ``**FILE**`` in the guide."""
    match = re.search(rf"\*\*{re.escape(file)}\*\*.*?```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert match, f"the guide has no code block for {file}"
    return match.group(1)


@pytest.fixture
def npu(tmp_path, monkeypatch):
    folder = tmp_path / "hpvm-acme-npu"
    new_target("acme_npu", folder)
    package = folder / "hpvm_acme_npu"
    with open(package / "matcher.py", "a") as matcher:  # the guide shows two definitions
        matcher.write("\n\n" + example_code("matcher.py"))
    (package / "codegen.py").write_text(example_code("codegen.py"))
    (package / "device.py").write_text(example_code("device.py"))
    monkeypatch.syspath_prepend(str(folder))
    registry = Registry()
    registry.register(importlib.import_module("hpvm_acme_npu.plugin"), name="acme",
                      distribution="hpvm-acme-npu")
    yield TargetUnderTest("acme_npu", registry=registry)
    for name in [m for m in sys.modules if m.startswith("hpvm_acme_npu")]:
        del sys.modules[name]


def test_worked_example_runs_relu_on_the_npu_and_the_rest_elsewhere(npu):
    program = by_name("lenet_tiny")
    exe = npu.compile(program.load(), targets=["acme_npu", "cpu"])
    assert npu.nodes_on_target(exe) == ["@main.relu1"]
    npu.check_program(program)


def test_worked_example_device_has_memory_of_its_own(npu):
    device = npu.device()
    assert device.host_memory is False
    handle = device.allocate((2, 3), np.dtype(np.float32))
    assert isinstance(handle, int) and not device.copy_out(handle).any()
