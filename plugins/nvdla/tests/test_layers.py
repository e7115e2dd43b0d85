"""Every hardware-layer kind: fused as NVDLA's compiler fuses, placed on
nvdla, and computing what the interpreter computes, in FP16 within FP16's
precision."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.runtime import compile

_spec = importlib.util.spec_from_file_location("nvdla_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)

LAYERS = {  # program -> the fused layers' ops, in order
    "channel split": ["slice", "slice", "relu", "sigmoid", "concat"],
    "conv+bias+prelu": ["conv+bias+prelu"],
    "cdp lrn": ["cdp"],
    "cdp lrn, even window": ["cdp"],
    "conv+bias+relu": ["conv+bias+relu"],
    "conv+bias+relu6": ["conv+bias+clip"],
    "conv+bn folded": ["conv+bias"],
    "depthwise conv": ["conv+bias+relu"],
    "dilated conv": ["conv+bias+relu"],
    "conv+add_tensor+relu": ["conv+add_tensor+relu"],
    "pdp max": ["pdp"],
    "pdp avg": ["pdp"],
    "pdp avg counting pads": ["pdp"],
    "sdp sigmoid": ["mul_channel+add_channel+sigmoid"],
    "sdp tanh": ["mul_channel+add_channel+tanh"],
    "sdp clip": ["mul_channel+add_channel+clip"],
    "fc+tanh, sigmoid": ["fc+bias+tanh+sigmoid"],
    "concat": ["conv", "conv", "concat"],
}


def inputs_for(module, batch=3):
    shape = (batch,) + tuple(module.root_graph.param("x").type.shape[1:])
    return {"x": np.random.default_rng(1).standard_normal(shape).astype(np.float32)}


def layer_ops(exe):
    from hpvm_nvdla.loadable import read
    artifact = exe.artifacts["nvdla"]
    [stem] = artifact.metadata["loadables"].values()
    return [layer.ops for layer in read(artifact.files[stem])[1]]


@pytest.mark.parametrize("name", sorted(programs.LAYER_PROGRAMS))
def test_a_layer_kind_fuses_and_matches_the_interpreter_in_fp16(name):
    module = programs.LAYER_PROGRAMS[name]()
    exe = compile(module, ["nvdla"])
    assert set(exe.placement.targets.values()) == {"nvdla"}, exe.placement.format()
    assert layer_ops(exe) == LAYERS[name]
    inputs = inputs_for(module)
    expected = run_module(module, inputs)["y"]
    got = exe(**inputs)["y"]
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=1e-2, atol=4e-3 * scale)


def test_fp16_rounds_where_the_hardware_rounds():
    from hpvm_nvdla.emulator import run_fp16
    from hpvm_nvdla.layers import Layer
    layer = Layer("s", "sdp", ["s"], ["x"], "s.y", (-1, 1), steps=[("add_channel", np.array(
        [1e-4], np.float32))])
    x = np.array([[1.0]], np.float32)
    # 1 + 1e-4 is 1 in FP16: SDP's result is rounded to FP16.
    assert run_fp16([layer], {"x": x})["s.y"][0, 0] == np.float16(1.0)


def test_the_run_report_gives_the_cycle_models_time():
    module = programs.conv_layer()
    exe = compile(module, ["nvdla"])
    exe(**inputs_for(module, batch=2))
    [record] = exe.report().records
    assert record.target == "nvdla (emulated; time from the cycle model)"
    from hpvm_nvdla import cost
    from hpvm_nvdla.config import CONFIGS
    from hpvm_nvdla.loadable import read
    artifact = exe.artifacts["nvdla"]
    header, layers = read(next(iter(artifact.files.values())))
    expected = cost.estimate(layers, 2, {"x": (8, 9, 9)}, "fp16", CONFIGS["nv_full"])["seconds"]
    assert record.seconds == pytest.approx(expected)


def test_what_nvdla_cannot_run_falls_back_with_the_reason():
    from hpvm.ir.text import load_module
    module = load_module(Path(__file__).parents[3] / "examples" / "ir" / "lenet_tiny.hpvm")
    exe = compile(module, ["nvdla"])
    assert exe.placement.targets["@main.softmax"] == "cpu"
    assert "nvdla: NVDLA has no softmax engine" in exe.placement.reasons["@main.softmax"]
    assert exe.placement.targets["@main.conv1"] == "nvdla"
    image = np.random.default_rng(2).uniform(0, 1, (4, 1, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(exe(image=image)["probabilities"],
                               run_module(module, {"image": image})["probabilities"],
                               rtol=1e-2, atol=2e-3)


def test_weights_fed_at_run_time_are_refused():
    b = programs.Builder((4, 5, 5))
    computed = b.op("computed", "relu", {"x": b.const("w", programs.weights(4, 4, 1, 1))})
    module = b.build(b.op("conv", "conv2d", {"x": "x", "w": computed}))
    from hpvm_nvdla.matcher import refusal
    graph = module.root_graph
    assert "must be a constant" in refusal(module, graph, graph.node("conv"))


def test_nv_small_has_no_fp16():
    from hpvm.errors import TargetError
    with pytest.raises(TargetError, match="nv_small has no FP16 engines; use precision='int8'"):
        compile(programs.conv_layer(), ["nvdla"], options={"config": "nv_small"})
