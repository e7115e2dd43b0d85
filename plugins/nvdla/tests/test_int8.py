"""INT8: calibration, per-channel weight quantisation, and the engines'
integer arithmetic: bit-exact against a plain numpy rendering of the
documented pipeline, and close to FP32 on every layer kind."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import TargetError
from hpvm.interp import run_module
from hpvm.runtime import compile

_spec = importlib.util.spec_from_file_location("nvdla_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)


def batches(module, count=4, batch=8, seed=5):
    shape = tuple(module.root_graph.param("x").type.shape[1:])
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((batch,) + shape).astype(np.float32)} for _ in range(count)]


def int8_exe(module, **options):
    return compile(module, ["nvdla"], options={"precision": "int8",
                                               "calibration": batches(module), **options})


@pytest.mark.parametrize("name", sorted(programs.LAYER_PROGRAMS))
def test_every_layer_kind_in_int8_stays_near_fp32(name):
    module = programs.LAYER_PROGRAMS[name]()
    exe = int8_exe(module)
    x = batches(module, count=1, batch=3, seed=9)[0]
    expected = run_module(module, x)["y"]
    error = np.abs(exe(**x)["y"] - expected).max() / np.abs(expected).max()
    assert error < 0.06, f"{name}: INT8 error {error:.3f} of the output's range"


def round_away(x):
    return np.trunc(x + np.copysign(0.5, x)).astype(np.int64)


def fixed_point(ratio):
    shift = 14 - int(np.floor(np.log2(abs(ratio))))
    m = int(round_away(np.float64(ratio * 2.0 ** shift)))
    if abs(m) >= 2 ** 15:
        m, shift = int(round_away(np.float64(ratio * 2.0 ** (shift - 1)))), shift - 1
    return m, shift


def test_conv_bias_relu_is_bit_exact_with_the_documented_integer_pipeline():
    module = programs.conv_layer()
    exe = int8_exe(module)
    from hpvm_nvdla.loadable import read
    artifact = exe.artifacts["nvdla"]
    [stem] = artifact.metadata["loadables"].values()
    scales = read(artifact.files[stem])[0]["scales"]
    sx, sy = scales["x"], scales["conv.y"]
    graph = module.root_graph
    w = graph.node("w").body.data.astype(np.float64)
    b = graph.node("bias").body.data.astype(np.float64)
    x = batches(module, count=1, batch=2, seed=11)[0]["x"]
    # the reference, written from int8.py's docstring
    qx = np.clip(round_away(x.astype(np.float64) / sx), -127, 127)
    sw = np.abs(w.reshape(8, -1)).max(axis=1) / 127
    qw = np.clip(round_away(w / sw[:, None, None, None]), -127, 127)
    qb = round_away(b / (sx * sw))
    padded = np.pad(qx, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.int64)
    acc = np.zeros((2, 8, 9, 9), np.int64)
    for r in range(3):
        for s in range(3):
            acc += np.einsum("nchw,kc->nkhw", padded[:, :, r:r + 9, s:s + 9],
                             qw[:, :, r, s].astype(np.int64))
    acc = np.maximum(acc + qb[None, :, None, None], 0)
    out = np.empty_like(acc)
    for k in range(8):
        m, n = fixed_point(sx * sw[k] / sy)
        out[:, k] = (acc[:, k] * m + (1 << (n - 1))) >> n
    expected = np.clip(out, -128, 127).astype(np.float32) * np.float32(sy)
    np.testing.assert_array_equal(exe(x=x)["y"], expected)


def test_the_calibration_table_is_written_then_read(tmp_path):
    module = programs.residual()
    table = tmp_path / "scales.json"
    first = int8_exe(module, calibration_table=str(table))
    assert json.loads(table.read_text())["format"] == "hpvm-nvdla-calibration"
    second = compile(module, ["nvdla"], options={"precision": "int8",
                                                 "calibration_table": str(table)})
    x = batches(module, count=1, batch=2, seed=3)[0]
    np.testing.assert_array_equal(first(**x)["y"], second(**x)["y"])


def test_percentile_calibration_clips_outliers():
    module = programs.conv_layer()
    data = batches(module)
    data[0]["x"][0, 0, 0, 0] = 1000.0  # one outlier
    by_max = compile(module, ["nvdla"], options={"precision": "int8", "calibration": data})
    by_percentile = compile(module, ["nvdla"], options={
        "precision": "int8", "calibration": data, "calibration_method": "percentile",
        "percentile": 99.9})
    scale = {name: json.loads(exe.artifacts["nvdla"].files["calibration.json"])["scales"]["main/x"]
             for name, exe in (("max", by_max), ("percentile", by_percentile))}
    assert scale["max"] == pytest.approx(1000.0 / 127)
    assert scale["percentile"] < scale["max"] / 100


def test_int8_without_calibration_says_what_to_pass():
    with pytest.raises(TargetError, match="precision='int8' needs calibration data"):
        compile(programs.conv_layer(), ["nvdla"], options={"precision": "int8"})


def test_a_calibration_batch_of_the_wrong_shape_is_named():
    bad = [{"x": np.zeros((2, 3, 4, 4), np.float32)}]
    with pytest.raises(TargetError, match="calibration batch 0 does not run"):
        compile(programs.conv_layer(), ["nvdla"], options={"precision": "int8",
                                                           "calibration": bad})


def test_a_damaged_calibration_table_is_named(tmp_path):
    table = tmp_path / "scales.json"
    table.write_text("{not json")
    with pytest.raises(TargetError, match=r"calibration table .*scales.json cannot be read"):
        compile(programs.conv_layer(), ["nvdla"], options={"precision": "int8",
                                                           "calibration_table": str(table)})


def test_nv_small_runs_int8():
    module = programs.residual()
    exe = int8_exe(module, config="nv_small")
    x = batches(module, count=1, batch=2, seed=4)[0]
    expected = run_module(module, x)["y"]
    assert np.abs(exe(**x)["y"] - expected).max() < 0.06 * np.abs(expected).max()


def test_the_gpu_engine_is_bit_identical_in_int8():
    from hpvm_nvdla.torch_engine import available
    if not available():
        pytest.skip("torch sees no CUDA GPU here")
    module = programs.residual()
    numpy_exe = int8_exe(module, emulator_engine="numpy")
    torch_exe = int8_exe(module, emulator_engine="torch")
    x = batches(module, count=1, batch=4, seed=8)[0]
    np.testing.assert_array_equal(torch_exe(**x)["y"], numpy_exe(**x)["y"])


def test_asking_for_the_gpu_engine_without_a_gpu_says_so():
    from hpvm_nvdla.torch_engine import available
    if available():
        pytest.skip("this machine has the GPU")
    exe = int8_exe(programs.residual(), emulator_engine="torch")
    with pytest.raises(TargetError, match="emulator_engine='torch' needs PyTorch with a CUDA GPU"):
        exe(**batches(programs.residual(), count=1, batch=1)[0])
