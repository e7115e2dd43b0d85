"""The loadable: NVDLA's feature layout and weight packing, the file
format (versioned, self-contained), its dump, and the cycle model."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hpvm.runtime import Executable, compile
from hpvm_nvdla import cost
from hpvm_nvdla.config import CONFIGS
from hpvm_nvdla.layers import Layer
from hpvm_nvdla.loadable import (
    LoadableError, dump, pack_feature, pack_weights, read, surface, unpack_feature,
    unpack_weights,
)

_spec = importlib.util.spec_from_file_location("nvdla_programs", Path(__file__).with_name("programs.py"))
programs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(programs)
FULL = CONFIGS["nv_full"]


def test_feature_data_is_packed_by_atom():
    x = np.arange(2 * 20 * 3 * 2, dtype=np.float16).reshape(2, 20, 3, 2)
    packed = pack_feature(x, 16)
    assert packed.shape == (2, 2, 3, 2, 16)           # 20 channels: two surfaces of 16
    assert packed[0, 0, 1, 1, 5] == x[0, 5, 1, 1]     # channel 5 lies inside the atom
    assert packed[0, 1, 0, 0, 3] == x[0, 19, 0, 0] and packed[0, 1, 0, 0, 4] == 0
    np.testing.assert_array_equal(unpack_feature(packed, 20), x)


def test_a_surface_gives_nvdlas_strides():
    s = surface((-1, 20, 3, 5), "fp16", FULL)
    assert s["channels_per_atom"] == 16 and s["line_stride"] == 5 * 32
    assert s["surface_stride"] == 3 * 5 * 32 and s["batch_stride"] == 2 * 3 * 5 * 32
    assert surface((-1, 20, 3, 5), "int8", FULL)["batch_stride"] == 1 * 3 * 5 * 32


def test_weights_are_packed_in_atomic_blocks():
    w = np.random.default_rng(0).standard_normal((40, 70, 3, 3)).astype(np.float16)
    packed = pack_weights(w, FULL)
    assert packed.shape == (2, 3, 3, 2, 32, 64)
    assert packed[1, 2, 0, 1, 3, 5] == w[32 + 3, 64 + 5, 2, 0]
    np.testing.assert_array_equal(unpack_weights(packed, w.shape), w)


@pytest.fixture
def saved(tmp_path):
    exe = compile(programs.residual(), ["nvdla"])
    exe.save(tmp_path / "residual.hpvmx")
    return exe, tmp_path / "residual.hpvmx"


def test_the_loadable_alone_runs_the_program(saved):
    exe, folder = saved
    loaded = Executable.load(folder)
    x = np.random.default_rng(1).standard_normal((2, 8, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(loaded(x=x)["y"], exe(x=x)["y"])
    artifact = exe.artifacts["nvdla"]
    [stem] = artifact.metadata["loadables"].values()
    header, layers = read(artifact.files[stem])
    assert header["format"] == "hpvm-nvdla-loadable" and header["batch"] == "dynamic"
    assert [layer.ops for layer in layers] == ["conv+add_tensor+relu"]
    assert layers[0].weight.shape == (8, 8, 3, 3)


def test_a_foreign_or_newer_file_is_refused():
    with pytest.raises(LoadableError, match="bad magic"):
        read(b"PK\x03\x04 not a loadable")
    exe = compile(programs.residual(), ["nvdla"])
    data = bytearray(next(iter(exe.artifacts["nvdla"].files.values())))
    data[8:10] = (2).to_bytes(2, "little")
    with pytest.raises(LoadableError, match="format 2.0; this hpvm-nvdla reads 1.x"):
        read(bytes(data))


def test_hpvm_nvdla_dump_prints_the_layers(saved):
    _, folder = saved
    result = subprocess.run([sys.executable, "-m", "hpvm_nvdla.cli", "dump", str(folder)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "layer   0 conv   conv+add_tensor+relu" in result.stdout
    assert "8x6x6 fp16 (16 ch/atom, line 192, surface 1152, batch 1152)" in result.stdout
    assert "[conv, sum, act]" in result.stdout


def test_hpvm_nvdla_dump_of_a_wrong_file_is_one_line(tmp_path):
    bad = tmp_path / "x.nvdla"
    bad.write_bytes(b"junk")
    result = subprocess.run([sys.executable, "-m", "hpvm_nvdla.cli", "dump", str(bad)],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == f"hpvm-nvdla: {bad}: not an hpvm NVDLA loadable (bad magic)"


def test_dump_gives_int8_scales():
    module = programs.residual()
    x = np.random.default_rng(0).standard_normal((4, 8, 6, 6)).astype(np.float32)
    exe = compile(module, ["nvdla"], options={"precision": "int8", "calibration": {"x": x}})
    text = dump(next(v for k, v in exe.artifacts["nvdla"].files.items() if k.endswith(".nvdla")))
    assert "int8 scales: " in text and "int8 (32 ch/atom" in text


def test_the_cycle_model_of_a_convolution():
    # 1x1 convolution, 64 -> 32 channels on 10x10, INT8 on nv_full: one
    # atomic block per output pixel, so 100 compute cycles per image.
    layer = Layer("c", "conv", ["c"], ["x"], "c.y", (-1, 32, 10, 10),
                  {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1},
                  np.zeros((32, 64, 1, 1), np.float32))
    one = cost.layer_cycles(layer, 1, {"x": (64, 10, 10)}, "int8", FULL)
    assert one["compute_cycles"] == 100 and one["macs"] == 32 * 64 * 100
    assert cost.layer_cycles(layer, 1, {"x": (64, 10, 10)}, "fp16", FULL)["compute_cycles"] == 200
    small = cost.layer_cycles(layer, 1, {"x": (64, 10, 10)}, "int8", CONFIGS["nv_small"])
    assert small["compute_cycles"] == 100 * 8 * 4


def test_estimate_weighs_batch_and_configuration():
    from hpvm.registry import get_registry
    from hpvm.runtime.sizes import node_sizes
    from hpvm.target import NodeRef
    module = programs.conv_layer()
    target = get_registry().target("nvdla").target
    nodes = [NodeRef("main", n.name) for n in module.root_graph.nodes]
    x = np.zeros((4, 8, 9, 9), np.float32)
    four = target.estimate(module, nodes, {}, sizes=node_sizes(module, {"x": x}))
    one = target.estimate(module, nodes, {}, sizes=node_sizes(module, {"x": x[:1]}))
    assert four["layers"] == 1 and four["macs"] == 4 * one["macs"]
    assert four["seconds"] > one["seconds"] > 0
    slow = target.estimate(module, nodes, {"bandwidth_gbs": 0.01})
    assert slow["memory_cycles"] > slow["compute_cycles"]


def test_int8_from_the_command_line_with_an_npz_of_calibration_inputs(tmp_path, capsys):
    from hpvm.cli import main
    lenet = Path(__file__).parents[3] / "examples" / "ir" / "lenet_tiny.hpvm"
    calibration = tmp_path / "calib.npz"
    np.savez(calibration, image=np.random.default_rng(0).uniform(0, 1, (16, 1, 8, 8)).astype(np.float32))
    exe = tmp_path / "lenet.hpvmx"
    assert main(["compile", str(lenet), "-t", "nvdla", "-O", "precision=int8",
                 "-O", f"calibration={calibration}", "-o", str(exe)]) == 0
    artifact = Executable.load(exe).artifacts["nvdla"]
    assert "calibration.json" in artifact.files
    assert main(["compile", str(lenet), "-t", "nvdla", "-O", "precision=int8",
                 "-O", f"calibration={tmp_path / 'missing.npz'}",
                 "-o", str(tmp_path / "other.hpvmx")]) != 0
    assert "calibration file" in capsys.readouterr().err
