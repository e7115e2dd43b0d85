"""The example programs on the OpenCL device against the interpreter:
batch, streaming, saved and loaded, tuned work groups."""
from pathlib import Path

import pytest

import hpvm.runtime as rt
from hpvm.interp import run_module
from hpvm.ir.text import load_module
from hpvm.options import OptionError
from hpvm.registry import get_registry
from hpvm.runtime import Executable
from hpvm.testing import (assert_outputs_close, check_against_interpreter, random_inputs,
                          stream_inputs)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "ir"
SIZES = {"H": 13, "W": 17, "N": 3, "M": 9, "K": 11}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def batch_examples():
    return [p for p in sorted(EXAMPLES.glob("*.hpvm")) if not load_module(p).root_graph.is_streaming]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["waited", "asynchronous"])
@pytest.mark.parametrize("path", batch_examples(), ids=lambda p: p.stem)
def test_examples_match_the_interpreter(path, asynchronous):
    module = load_module(path)
    exe = check_against_interpreter(module, random_inputs(module.root_graph, SIZES), ["gpu_opencl"],
                                    options={"gpu_opencl": {"asynchronous": asynchronous}},
                                    **TOLERANCE)
    assert set(exe.placement.targets.values()) == {"gpu_opencl"}


def test_streaming_example_matches_the_interpreter():
    module = load_module(EXAMPLES / "pipeline.hpvm")
    fixed, frames = stream_inputs(module.root_graph, random_inputs(module.root_graph, SIZES), 6)
    check_against_interpreter(module, fixed, ["gpu_opencl"], frames, **TOLERANCE)


def test_saved_executables_load_and_run(tmp_path):
    module = load_module(EXAMPLES / "matmul.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    rt.compile(module, targets=["gpu_opencl"]).save(tmp_path / "mm.hpvmx")
    assert (tmp_path / "mm.hpvmx" / "artifacts" / "gpu_opencl" / "kernels.cl").exists()
    loaded = Executable.load(tmp_path / "mm.hpvmx")
    assert_outputs_close(loaded(**inputs), run_module(module, inputs), **TOLERANCE)


@pytest.mark.parametrize("work_group", [(4, 4), {"mm": (2, 8)}])
def test_work_group_option_pads_the_global_size(work_group):
    module = load_module(EXAMPLES / "matmul.hpvm")  # 9 x 3 instances: padded
    inputs = random_inputs(module.root_graph, SIZES)
    exe = rt.compile(module, targets=["gpu_opencl"], options={"work_group": work_group})
    assert_outputs_close(exe(**inputs), run_module(module, inputs), **TOLERANCE)


def test_transfer_mode_instances_per_item_lanes_and_work_group_sizes_are_tuning_knobs():
    module = load_module(EXAMPLES / "matmul.hpvm")
    target = get_registry().target("gpu_opencl").target
    nodes = rt.compile(module, targets=["gpu_opencl"]).placement.nodes_of("gpu_opencl")
    transfer, per_item, layout, narrow, lanes, work_group = target.knobs(module, nodes)
    assert transfer.name == "transfer" and transfer.node is None and transfer.default == "auto"
    assert set(transfer.values) == {"auto", "copy", "map", "pinned"}
    assert per_item.name == "per_item" and per_item.node is None
    assert per_item.values == (1, 2, 4, 8) and per_item.default in per_item.values
    assert layout.name == "per_item_layout" and layout.default == "auto"
    assert set(layout.values) == {"auto", "contiguous", "strided", "march"}
    assert narrow.name == "narrow_indices" and narrow.values == (True, False)
    assert lanes.name == "lanes" and lanes.values == (1, 2, 4, 8) and lanes.default == 4
    assert work_group.name == "work_group" and work_group.default is None
    assert (16, 16) in work_group.values


def test_hpvm_targets_lists_the_opencl_devices():
    availability = get_registry().target("gpu_opencl").availability
    assert availability.available
    assert "devices: [0.0]" in availability.reason and "default:" in availability.reason


def test_device_option_that_matches_nothing_is_a_clear_error():
    module = load_module(EXAMPLES / "matmul.hpvm")
    with pytest.raises(Exception, match="no OpenCL device matches.*devices found"):
        rt.compile(module, targets=["gpu_opencl"], options={"device": "no-such-device"})


@pytest.mark.parametrize("transfer", ["auto", "copy", "map", "pinned"])
def test_every_transfer_mode_moves_data_correctly(transfer, monkeypatch):
    import hpvm_opencl.transfers as transfers
    monkeypatch.setattr(transfers, "PINNED_MINIMUM", 1)  # small arrays take the pinned path too
    # pieces of the staging memory and of the threads' shares, at these sizes
    monkeypatch.setattr(transfers, "STAGE_BYTES", 256)
    monkeypatch.setattr(transfers, "PIECE_BYTES", 64)
    monkeypatch.setattr(transfers, "_STAGINGS", {})
    module = load_module(EXAMPLES / "blur.hpvm")
    inputs = random_inputs(module.root_graph, SIZES)
    exe = rt.compile(module, targets=["gpu_opencl"], options={"transfer": transfer})
    assert_outputs_close(exe(**inputs), run_module(module, inputs), **TOLERANCE)


def test_unknown_transfer_mode_is_a_clear_error():
    module = load_module(EXAMPLES / "blur.hpvm")
    with pytest.raises(OptionError, match="option 'transfer' of target 'gpu_opencl' expects one "
                                          "of 'auto', 'copy', 'map', 'pinned', got 'teleport'"):
        rt.compile(module, targets=["gpu_opencl"], options={"transfer": "teleport"})
