"""Narrow storage types as OpenCL C: casts to and from bf16, float8, float4
and int4 give the interpreter's bits, and bitcast moves bits, on the
device (PoCL here)."""
import numpy as np
import pytest

import hpvm
from hpvm.ir.tensor_ops.testing import same_bits, sample_floats, single_op_module


def run(op, inputs, attrs, target="gpu_opencl"):
    return hpvm.compile(single_op_module(op, inputs, attrs), target)(**inputs)["y"]


@pytest.mark.parametrize("to", ["bf16", "f8e4m3fn", "f8e5m2fnuz", "f4e2m1", "i4"])
def test_casts_give_the_interpreters_bits(to):
    x = sample_floats(count=600)
    narrow = run("cast", {"x": x}, {"to": to})
    # a float out of an integer type's range, or NaN, casts to no defined
    # value (the op's semantics): x86 gives one pattern, NVIDIA saturates
    defined = np.isfinite(x) & (np.trunc(x) >= -8) & (np.trunc(x) <= 7) if to == "i4" \
        else np.ones(x.shape, bool)
    expected = run("cast", {"x": x}, {"to": to}, "interp")
    assert same_bits(narrow[defined], expected[defined]).all()
    np.testing.assert_array_equal(run("cast", {"x": narrow}, {"to": "f32"}),
                                  narrow.astype(np.float32))


def test_bitcast_reads_the_bits():
    x = np.linspace(-3, 3, 11, dtype=np.float32)
    np.testing.assert_array_equal(run("bitcast", {"x": x}, {"to": "i32"}), x.view(np.int32))
