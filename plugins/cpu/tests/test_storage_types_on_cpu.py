"""Narrow storage types compiled for the cpu: casts to and from every one
give the interpreter's bits (bf16, float8, float4, int4, int2), an op on
bf16 values matches the interpreter, and bitcast moves bits."""
import ml_dtypes
import numpy as np
import pytest

import hpvm
from hpvm.ir.tensor_ops.testing import same_bits, sample_floats, single_op_module
from hpvm.ir.types import NARROW_TYPES, SCALAR_TYPES


def run(op, inputs, attrs=None, target="cpu"):
    return hpvm.compile(single_op_module(op, inputs, attrs), target)(**inputs)["y"]


@pytest.mark.parametrize("to", [t.name for t in NARROW_TYPES])
def test_casts_give_the_interpreters_bits(to):
    x = sample_floats(count=1500)
    for saturate in (True, False):
        attrs = {"to": to, "saturate": saturate}
        narrow = run("cast", {"x": x}, attrs)
        assert same_bits(narrow, run("cast", {"x": x}, attrs, "interp")).all()
        wide = run("cast", {"x": narrow}, {"to": "f32"})
        np.testing.assert_array_equal(wide, narrow.astype(np.float32))


def test_bf16_sums_match_the_interpreter():
    rng = np.random.default_rng(3)
    inputs = {"a": rng.standard_normal((4, 33)).astype(ml_dtypes.bfloat16),
              "b": rng.standard_normal((33,)).astype(ml_dtypes.bfloat16)}
    got = run("binary", inputs, {"fn": "add"})
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.view(np.uint16),
                                  run("binary", inputs, {"fn": "add"}, "interp").view(np.uint16))


@pytest.mark.parametrize("source,to", [("f32", "u32"), ("u64", "f64"), ("bf16", "i16"),
                                       ("f16", "i16"), ("bool", "i8")])
def test_bitcast(source, to):
    x = (np.arange(-5, 5) * 2.5).astype(SCALAR_TYPES[source].numpy_dtype)
    got = run("bitcast", {"x": x}, {"to": to})
    np.testing.assert_array_equal(got.view(np.uint8), x.view(SCALAR_TYPES[to].numpy_dtype)
                                  .view(np.uint8))
