"""Approximation knobs on cpu: the lowered perforation, sampling and fill
kernels, the rounding of an fp16 node and the quantisation of an int8
node compute what the interpreter does."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.tensor_ops.testing import (
    APPROXIMATION_CASES, INT8_CASES, approximation_case, int8_case, single_op_module,
)
from hpvm.runtime import compile


@pytest.mark.parametrize("name", sorted(APPROXIMATION_CASES))
def test_approximation_matches_the_interpreter(name):
    module, inputs, _ = approximation_case(name)
    out = compile(module, ["cpu"])(**inputs)["y"]
    np.testing.assert_allclose(out, run_module(module, inputs)["y"], rtol=1e-5, atol=1e-5)


def test_an_fp16_node_rounds_like_the_interpreter():
    rng = np.random.default_rng(1)
    inputs = {"a": rng.standard_normal((5, 7)).astype(np.float32),
              "b": rng.standard_normal((7, 3)).astype(np.float32)}
    module = single_op_module("matmul", inputs, attributes={"precision": "fp16"})
    out = compile(module, ["cpu"])(**inputs)["y"]
    expected = run_module(module, inputs)["y"]
    assert not np.array_equal(expected, inputs["a"] @ inputs["b"])
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    assert np.array_equal(out, out.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("blas", [True, False])
@pytest.mark.parametrize("name", sorted(INT8_CASES))
def test_an_int8_node_quantises_like_the_interpreter(name, blas):
    module, inputs = int8_case(name)
    out = compile(module, ["cpu"], {"blas": blas})(**inputs)["y"]
    np.testing.assert_allclose(out, run_module(module, inputs)["y"], rtol=1e-5, atol=1e-5)
