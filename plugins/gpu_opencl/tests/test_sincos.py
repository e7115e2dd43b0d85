"""The sine and cosine of one value computed together with OpenCL's
``sincos`` (hpvm_opencl/sincos.py): rendered where a ``let`` value has
both taken and is not assigned or declared again after; the results are
the interpreter's on the device."""
import numpy as np
import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import parse_module
from hpvm_opencl.renderer import OpenCLRenderer

PROGRAM = """hpvm 1.0
module waves

func @waves(in x: f32[N], in k: f32[K], out re: f32[N], out im: f32[N]) {
  let i: i64 = instance_id(0)
  let r: f32 = f32(0.0)
  let m: f32 = f32(0.0)
  for j in 0 .. K step 1 {
    let angle: f32 = x[i] * k[j]
    r = r + cos(angle)
    m = m + sin(angle)
  }
  re[i] = r
  im[i] = m
}

graph @main(in x: f32[N], in k: f32[K], out re: f32[N], out im: f32[N]) {
  node w = @waves [N]
  in x -> w.x
  in k -> w.k
  out w.re -> re
  out w.im -> im
}

root @main
"""
"""MRI-Q's sums over k-space, cut down."""


def rendered(text: str) -> str:
    renderer = OpenCLRenderer(parse_module(text))
    renderer.add_entry("waves", 1)
    return renderer.finish().text


def test_a_value_whose_sine_and_cosine_are_both_taken_reduces_once():
    text = rendered(PROGRAM)
    assert "float hpvm_sin_angle = sincos(angle, &hpvm_cos_angle);" in text
    assert "(r + hpvm_cos_angle)" in text and "(m + hpvm_sin_angle)" in text
    assert "sin(angle)" not in text and "cos(angle)" not in text


@pytest.mark.parametrize("change", [
    ("m = m + sin(angle)", "m = m + sin(r)"),                          # one of the two
    ("m = m + sin(angle)", "angle = angle * f32(2.0)\n    m = m + sin(angle)"),   # assigned
])
def test_otherwise_each_is_computed_as_written(change):
    text = rendered(PROGRAM.replace(*change))
    assert "sincos" not in text and "cos(angle)" in text


def test_the_sums_are_the_interpreter_s():
    module = parse_module(PROGRAM)
    rng = np.random.default_rng(3)
    inputs = {"x": rng.uniform(-4, 4, 300).astype(np.float32),
              "k": rng.uniform(-16, 16, 64).astype(np.float32)}
    got = rt.compile(module, targets=["gpu_opencl"])(**inputs)
    want = run_module(module, inputs)
    for port in ("re", "im"):
        np.testing.assert_allclose(got[port], want[port], rtol=1e-4, atol=1e-4, err_msg=port)
