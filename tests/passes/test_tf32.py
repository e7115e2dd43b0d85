"""TF32: the rounding, the interpreter's semantics, the tf32 knob, and
placement keeping TF32 nodes off targets that would lower them to kernels
(kernel IR cannot round a float's bits)."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp import run_module
from hpvm.ir.graph import TensorBody
from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.precision import round_tf32
from hpvm.ir.tensor_ops.testing import CONV_LAYER_ATTRS, conv_layer, single_op_module
from hpvm.ir.verify import verify
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.approximate import apply_knobs

LAYER, ARRAYS = conv_layer(7)
X, W, B = ARRAYS["x"], ARRAYS["w"], ARRAYS["b"]
ATTRS = CONV_LAYER_ATTRS


def test_round_tf32_keeps_ten_mantissa_bits_to_nearest_even():
    ulp = 2.0 ** -10
    values = np.array([1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 2 + 2 ** -20, -2.5, np.inf],
                      np.float32)
    np.testing.assert_array_equal(round_tf32(values),
                                  np.array([1, 1 + 2 * ulp, 1 + ulp, -2.5, np.inf], np.float32))
    assert np.isnan(round_tf32(np.array([np.nan], np.float32)))[0]
    bits = round_tf32(X).view(np.uint32)
    assert not np.any(bits & np.uint32(0x1FFF))
    assert np.abs(round_tf32(X) - X).max() <= 2.0 ** -11 * np.abs(X).max()


def test_a_tf32_node_rounds_its_operands_and_not_its_bias():
    module = apply_knobs(LAYER, {"op": "tf32"})
    assert module.root_graph.node("op").attributes == {"precision": "tf32"}
    verify(module)
    expected = TENSOR_OPS["conv2d"].evaluate(
        {"x": round_tf32(X), "w": round_tf32(W), "b": B}, ATTRS)["y"]
    out = run_module(module, {"x": X})["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    assert not np.array_equal(out, run_module(LAYER, {"x": X})["y"])


def test_tf32_fits_only_the_products():
    relu = single_op_module("relu", {"x": X})
    with pytest.raises(PassError, match="knob 'tf32' does not apply to a relu"):
        apply_knobs(relu, {"op": "tf32"})
    wrong = single_op_module("relu", {"x": X}, attributes={"precision": "tf32"})
    with pytest.raises(VerificationError, match="precision='tf32' does not fit a relu"):
        verify(wrong)


def test_lowering_keeps_a_tf32_node_as_a_tensor_node():
    lowered = run_pipeline(apply_knobs(LAYER, {"op": "tf32"}), "legalize-tensor-ops")
    assert isinstance(lowered.root_graph.node("op").body, TensorBody)


def test_placement_keeps_a_tf32_conv_off_a_target_whose_kernels_lack_tf32():
    from hpvm.runtime import compile
    module = apply_knobs(LAYER, {"op": "tf32"})
    exe = compile(module, ["cpu"])
    assert exe.placement.targets["@main.op"] == "interp"
    assert "does not compute in precision tf32" in exe.placement.reasons["@main.op"]
    np.testing.assert_array_equal(exe(x=X)["y"], run_module(module, {"x": X})["y"])
