"""INT8: quantisation semantics, the calibrate pass, the int8 knob of the
approximate pass, the verifier, and placement passing over targets whose
native ops cannot compute in INT8."""
import numpy as np
import pytest

from hpvm.cli import main
from hpvm.interp import run_module
from hpvm.ir.tensor_ops import TENSOR_OPS
from hpvm.ir.tensor_ops.int8 import QMAX, quantize
from hpvm.ir.tensor_ops.testing import CONV_LAYER_ATTRS, conv_layer, int8_case, single_op_module
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.verify import verify
from hpvm.passes import PassError
from hpvm.passes.approximate import apply_knobs
from hpvm.passes.calibrate import calibrate

LAYER, ARRAYS = conv_layer(5)
X, W, B = ARRAYS["x"], ARRAYS["w"], ARRAYS["b"]
ATTRS = CONV_LAYER_ATTRS


def test_quantize_rounds_half_up_and_saturates_at_127_steps():
    values = np.array([0.05, 0.15, -0.05, -0.15, 0.04, 99.0, -99.0], np.float32)
    got = quantize(values, 0.1) / np.float32(0.1)
    np.testing.assert_allclose(got, [1, 2, 0, -1, 0, QMAX, -QMAX], atol=1e-5)
    assert quantize(values, 0.1).dtype == np.float32


def test_calibrate_records_each_operands_largest_magnitude_over_127():
    module = calibrate(LAYER, {"x": X})
    scales = module.root_graph.node("op").attributes["int8_scales"]
    np.testing.assert_allclose(scales, [np.abs(X).max() / 127, np.abs(W).max() / 127],
                               rtol=1e-6)
    assert run_module(module, {"x": X})["y"].tobytes() == run_module(
        LAYER, {"x": X})["y"].tobytes()  # calibrating changes nothing by itself
    wide = calibrate(LAYER, [{"x": X}, {"x": 3 * X}], method="percentile",
                     percentile=50)
    median = np.percentile(np.abs(np.concatenate([X, 3 * X])), 50)
    np.testing.assert_allclose(wide.root_graph.node("op").attributes["int8_scales"][0],
                               median / 127, rtol=1e-6)


def test_int8_quantises_only_the_operands_and_stays_close_to_exact():
    module = apply_knobs(calibrate(LAYER, {"x": X}), {"op": "int8"})
    node = module.root_graph.node("op")
    assert node.attributes["precision"] == "int8"
    verify(module)
    sx, sw = node.attributes["int8_scales"]
    expected = TENSOR_OPS["conv2d"].evaluate(
        {"x": quantize(X, sx), "w": quantize(W, sw), "b": B}, ATTRS)["y"]
    out = run_module(module, {"x": X})["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    exact = run_module(LAYER, {"x": X})["y"]
    assert not np.array_equal(out, exact)
    assert np.abs(out - exact).max() < 0.03 * np.abs(exact).max()


def test_an_int8_module_round_trips_as_text():
    module = apply_knobs(calibrate(LAYER, {"x": X}), {"op": "perf-rows-2-0+int8"})
    text = print_module(module)
    assert 'precision = "int8"' in text and "int8_scales = [" in text
    assert print_module(parse_module(text)) == text
    np.testing.assert_array_equal(run_module(parse_module(text), {"x": X})["y"],
                                  run_module(module, {"x": X})["y"])


@pytest.mark.parametrize("module, knob, words", [
    (LAYER, "int8", "node 'op'.*no int8_scales.*calibrate first"),
    (single_op_module("relu", {"x": X}), "int8", "does not apply to a relu.*conv2d, gemm, matmul"),
    (LAYER, "fp16+int8", "sets the precision twice"),
])
def test_bad_int8_knobs_name_the_node_and_the_fix(module, knob, words):
    with pytest.raises(PassError, match=words):
        apply_knobs(module, {"op": knob})


@pytest.mark.parametrize("attributes, words", [
    ({"precision": "int8"}, "no int8_scales"),
    ({"precision": "int8", "int8_scales": (0.1,)}, "is not 2 positive finite numbers"),
    ({"precision": "int8", "int8_scales": (0.1, -1.0)}, "is not 2 positive finite numbers"),
])
def test_the_verifier_refuses_an_int8_node_without_usable_scales(attributes, words):
    from hpvm.errors import VerificationError
    module = single_op_module("conv2d", {"x": X, "w": W}, ATTRS, attributes=attributes)
    with pytest.raises(VerificationError, match=words):
        verify(module)


def test_hpvm_opt_calibrates_from_an_npz_then_applies_the_knob(tmp_path, capsys):
    program, data = tmp_path / "conv.hpvm", tmp_path / "calib.npz"
    program.write_text(print_module(LAYER))
    np.savez(data, x=X)
    out = tmp_path / "int8.hpvm"
    assert main(["opt", str(program), "-p",
                 f"calibrate{{data={data}}},approximate{{knobs=op:int8}}", "-o", str(out)]) == 0
    text = out.read_text()
    assert 'precision = "int8"' in text
    assert main(["opt", str(program), "-p", "calibrate"]) == 1
    assert "calibrate: no calibration data" in capsys.readouterr().err
    np.savez(data, x=X[:, :2])
    assert main(["opt", str(program), "-p", f"calibrate{{data={data}}}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error: ") and "calibration batch 0 does not run" in err
    assert "Traceback" not in err


def test_placement_passes_over_a_native_op_that_cannot_compute_in_int8():
    from hpvm.registry import get_registry
    from hpvm.runtime import compile
    from hpvm.runtime.placement import precision_refusal, takes
    registry = get_registry()
    if not registry.target("nvdla").availability.available:
        pytest.skip("nvdla is not installed")
    module, inputs = int8_case("conv-int8")
    nvdla = registry.target("nvdla").target
    node = module.root_graph.node("op")
    assert nvdla.claims(module, module.root_graph, node)
    assert not takes(nvdla, module, module.root_graph, node)
    assert "does not compute in precision int8" in precision_refusal(nvdla, node)
    exe = compile(module, ["nvdla"])
    assert exe.placement.targets["@main.op"] != "nvdla"
    np.testing.assert_allclose(exe(**inputs)["y"], run_module(module, inputs)["y"],
                               rtol=1e-5, atol=1e-5)
