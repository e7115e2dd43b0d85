"""Branches on a launch's size (launch_tests.py): the program built at
compile time takes them as false, a launch whose test holds runs a program
built with it true, and the source alone tests them at run time; every
way gives the interpreter's results."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm.testing import assert_outputs_close
from hpvm_opencl import launch_tests
from hpvm_opencl import program as opencl_program

PROGRAM = """hpvm 1.0
module m

func @k(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  if instance_count(0) * 4 <= 64 {
    y[i] = x[i] * f32(2.0)
  } else {
    y[i] = x[i] + f32(1.0)
  }
}

graph @main(in x: f32[N], out y: f32[N]) {
  node a = @k [N]
  in x -> a.x
  out a.y -> y
}

root @main
"""
MACRO = "HPVM_LAUNCH_k_0"


@pytest.fixture
def builds(monkeypatch):
    """The launch-test flags of every program built."""
    seen = []
    original = opencl_program.build_program

    def recording(runtime, source, flags, explain_line=None):
        seen.append(tuple(f for f in flags if f.startswith("-DHPVM_LAUNCH_")))
        return original(runtime, source, flags, explain_line)

    monkeypatch.setattr(opencl_program, "build_program", recording)
    return seen


def run(exe, n: int):
    module = parse_module(PROGRAM)
    x = np.arange(n, dtype=np.float32)
    assert_outputs_close(exe(x=x), run_module(module, {"x": x}))


def test_the_source_names_the_test_and_defines_it_as_the_condition():
    exe = hpvm.compile(parse_module(PROGRAM), ["gpu_opencl"])
    text = exe.artifacts["gpu_opencl"].files["kernels.cl"].decode()
    assert f"#ifndef {MACRO}\n" in text and f"if ({MACRO}) {{" in text
    assert f"#define {MACRO} (" in text and "<= 64L)" in text


def test_large_launches_run_the_first_program_small_ones_a_second(builds):
    exe = hpvm.compile(parse_module(PROGRAM), ["gpu_opencl"])
    run(exe, 100)
    assert set(builds) == {(f"-D{MACRO}=0",)}
    run(exe, 16)
    run(exe, 8)   # the same branch: no third program
    assert set(builds) == {(f"-D{MACRO}=0",), (f"-D{MACRO}=1",)}
    run(exe, 17)


def test_the_source_alone_tests_at_run_time(builds, monkeypatch):
    monkeypatch.setattr(launch_tests, "launch_flags", lambda module, true_tests: [])
    exe = hpvm.compile(parse_module(PROGRAM), ["gpu_opencl"])
    for n in (100, 16):
        run(exe, n)
    assert set(builds) == {()}
