"""CUDA tensors in and out of aten (runtime/device_arrays.py): tensors on
aten's GPU taken without a copy, outputs left there as tensors, with the
launches captured as a CUDA graph and without, bound runs too; on the CPU, torch tensors
come in as numpy arrays over the same memory and outputs stay numpy."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.runtime import compile

torch = pytest.importorskip("torch")

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA GPU")


@pytest.fixture(scope="module")
def lenet():
    from hpvm.frontend.onnx import load, testing
    return load(testing.export(testing.lenet(), (1, 28, 28)))


def images(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, 1, 28, 28)).astype(np.float32)


@CUDA
@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["captured", "launches"])
def test_cuda_tensors_in_and_out_move_no_byte(lenet, cuda_graphs):
    exe = compile(lenet, ["aten"], {"device": "cuda", "cuda_graphs": cuda_graphs})
    kept = []
    for seed in range(3):
        x = images(seed)
        expected = exe(x=x)["y"]
        tensor = torch.from_numpy(x).cuda()
        out = exe(x=tensor, outputs="device")["y"]
        assert isinstance(out, torch.Tensor) and out.is_cuda
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
        assert exe.report().bytes_copied == 0
        kept.append((out, expected))
    for out, expected in kept:  # a later run does not overwrite an earlier one's output
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)


@CUDA
@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["captured", "launches"])
def test_a_bound_run_reads_the_refilled_tensor(lenet, cuda_graphs):
    # Launches one by one: on one thread, the static schedule's (bind needs it).
    exe = compile(lenet, ["aten"], {"device": "cuda", "cuda_graphs": cuda_graphs,
                                    "task_parallelism": cuda_graphs})
    tensor = torch.from_numpy(images(0)).cuda()
    run = exe.bind(x=tensor, outputs="device")
    for seed in range(1, 4):
        x = images(seed)
        expected = exe(x=x)["y"]
        tensor.copy_(torch.from_numpy(x))  # refilled in place
        out = run()["y"]
        assert isinstance(out, torch.Tensor) and out.is_cuda
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
    records = [r.node for r in exe.report().records]
    assert ("<captured graph>" in records) == cuda_graphs


@CUDA
def test_device_array_makes_a_tensor_on_the_device(lenet):
    exe = compile(lenet, ["aten"], {"device": "cuda"})
    x = exe.device_array(images(0))
    assert isinstance(x, torch.Tensor) and x.is_cuda
    np.testing.assert_allclose(exe(x=x)["y"], exe(x=images(0))["y"], rtol=1e-6)


@CUDA
def test_a_cuda_tensor_for_a_cpu_executable_is_copied_once_and_counted(lenet):
    exe = compile(lenet, ["cpu"])
    x = images(1)
    out = exe(x=torch.from_numpy(x).cuda())
    np.testing.assert_allclose(out["y"], exe(x=x)["y"], rtol=1e-6)
    exe(x=torch.from_numpy(x).cuda())
    assert exe.report().bytes_copied == x.nbytes


@CUDA
def test_a_tensor_of_a_type_hpvm_does_not_take_is_refused_naming_the_input(lenet):
    exe = compile(lenet, ["aten"], {"device": "cuda"})
    with pytest.raises(ExecutionError, match="'x'.*bfloat16.*tensor.float()"):
        exe(x=torch.zeros((4, 1, 28, 28), dtype=torch.bfloat16, device="cuda"))


def test_on_the_cpu_tensors_come_in_as_numpy_and_outputs_stay_numpy(lenet):
    exe = compile(lenet, ["aten"], {"device": "cpu"})
    x = images(2)
    out = exe(x=torch.from_numpy(x), outputs="device")["y"]
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, exe(x=x)["y"], rtol=1e-6)


@CUDA
def test_a_replays_outputs_are_lent_and_a_view_kept_holds_them(lenet):
    exe = compile(lenet, ["aten"], {"device": "cuda"})
    starts, views = set(), []
    for seed in range(6):
        x = images(seed)
        out = exe(x=torch.from_numpy(x).cuda(), outputs="device")["y"]
        starts.add(out.untyped_storage().data_ptr())
        if seed == 1:
            views.append((out[1:3], exe(x=x)["y"][1:3]))  # a view alone keeps the memory lent
    assert len(starts) <= 4  # turns between a few replays' memory, no copy per call
    for view, expected in views:
        np.testing.assert_allclose(view.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_a_lent_slot_is_busy_while_an_alias_or_a_view_of_it_lives():
    from hpvm_aten.device import AtenDevice, Slot
    from hpvm.ir.graph import Module
    device = AtenDevice(Module("m", {}, {}, None), "cpu", None)
    slot = Slot((4,), torch.float32, torch.arange(4.0))
    alias = device.lend(slot)
    assert alias.data_ptr() == slot.tensor.data_ptr() and device.lent(slot)
    view = alias[2:]
    del alias
    assert device.lent(slot)
    del view
    assert not device.lent(slot)
    device._constants["w"] = slot.tensor
    assert device.lend(slot) is None  # a constant's memory is never lent


@CUDA
def test_a_tensor_passed_again_and_refilled_is_read_where_it_is(lenet):
    exe = compile(lenet, ["aten"], {"device": "cuda"})
    static_input = torch.zeros((4, 1, 28, 28), device="cuda")
    for seed in range(4):
        x = images(seed)
        static_input.copy_(torch.from_numpy(x))  # as a user of CUDA graphs refills one
        expected = exe(x=x)["y"]
        for _ in range(2):  # read where it is from the second run in a row on
            out = exe(x=static_input, outputs="device")["y"]
            np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)
        other = images(seed + 10)
        np.testing.assert_allclose(exe(x=torch.from_numpy(other).cuda())["y"],
                                   exe(x=other)["y"], rtol=1e-5, atol=1e-5)
