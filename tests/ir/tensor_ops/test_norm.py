"""batchnorm (inference): shape inference, semantics, lowering."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir import F32, BufferType
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

BATCHNORM = get_op("batchnorm")
PARAMETERS = ("scale", "bias", "mean", "var")


def f32(*shape):
    return BufferType(F32, shape)


def batch(rng, *shape):
    channels = shape[1]
    inputs = {"x": rng.standard_normal(shape).astype(np.float32)}
    inputs |= {p: rng.standard_normal(channels).astype(np.float32) for p in PARAMETERS}
    inputs["var"] = np.abs(inputs["var"]) + 0.1
    return inputs


def test_batchnorm_keeps_the_shape():
    types = {"x": f32("N", "C", 4, 4)} | {p: f32("C") for p in PARAMETERS}
    assert BATCHNORM.infer(types)["y"] == f32("N", "C", 4, 4)


def test_batchnorm_parameters_need_one_value_per_channel():
    types = {"x": f32("N", 3, 4)} | {p: f32(3) for p in PARAMETERS}
    types["mean"] = f32(4)
    with pytest.raises(VerificationError, match="length of 'mean' is 4 but the channel count"):
        BATCHNORM.infer(types)


def test_batchnorm_follows_the_onnx_formula():
    inputs = batch(np.random.default_rng(0), 2, 3, 4, 5)
    y = BATCHNORM.evaluate(inputs, {"epsilon": 1e-3})["y"]
    shaped = {p: inputs[p].astype(np.float64).reshape(1, 3, 1, 1) for p in PARAMETERS}
    expected = ((inputs["x"] - shaped["mean"]) / np.sqrt(shaped["var"] + 1e-3)
                * shaped["scale"] + shaped["bias"])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4), (1, 2, 3, 3)])
def test_batchnorm_lowering_matches_evaluate(shape):
    pytest.importorskip("hpvm.interp")
    inputs = batch(np.random.default_rng(1), *shape)
    assert_lowering_matches(tensor_node("bn", "batchnorm", types_of(**inputs)), inputs)
