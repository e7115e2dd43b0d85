"""Inputs from other array libraries: an array in host memory is taken
through DLPack without a copy; one on a device where no node runs is
copied to the host once (counted in the report); a value that is no
array, or a device array that cannot be copied, is refused with an error
naming the input and the fix."""
import numpy as np
import pytest

from hpvm.demo.edge_detection import edge_detect
from hpvm.errors import ExecutionError
from hpvm.runtime import compile

THRESHOLD = np.float32(0.3)


def image() -> np.ndarray:
    return np.random.default_rng(0).random((12, 16), dtype=np.float32)


class DLPackOnly:
    """An array that numpy reads only through DLPack (no __array__), on
    the DLPack device ``device``."""

    def __init__(self, array: np.ndarray, device=(1, 0)):
        self.array, self.device = array, device

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self.device


@pytest.fixture(scope="module")
def exe():
    return compile(edge_detect, targets=["interp"])


def test_a_host_array_is_taken_through_dlpack(exe):
    img = image()
    np.testing.assert_array_equal(exe(img=DLPackOnly(img), threshold=THRESHOLD)["edges"],
                                  exe(img=img, threshold=THRESHOLD)["edges"])


def test_a_host_array_is_not_copied(exe, monkeypatch):
    img, taken = image(), []
    real = np.from_dlpack
    monkeypatch.setattr(np, "from_dlpack", lambda value: taken.append(real(value)) or taken[-1])
    exe(img=DLPackOnly(img), threshold=THRESHOLD)
    assert np.shares_memory(taken[0], img)


def test_an_array_on_a_device_where_no_node_runs_is_copied_once_and_counted(exe):
    img = image()
    out = exe(img=DLPackOnly(img, device=(2, 0)), threshold=THRESHOLD)
    np.testing.assert_array_equal(out["edges"], exe(img=img, threshold=THRESHOLD)["edges"])
    exe(img=DLPackOnly(img, device=(2, 0)), threshold=THRESHOLD)
    records = exe.report().records
    assert records[0].node == "<inputs>" and records[0].copies.to_host == img.nbytes
    assert exe.report().bytes_copied == img.nbytes


class NoHostCopy(DLPackOnly):
    """An array on a device whose library cannot copy it to the host."""

    def __dlpack__(self, *args, dl_device=None, **kwargs):
        if dl_device is not None:
            raise BufferError("cross-device copies are not supported")
        return super().__dlpack__(*args, **kwargs)


def test_an_array_on_a_device_that_cannot_come_to_the_host_is_refused_naming_the_input(exe):
    with pytest.raises(ExecutionError) as error:
        exe(img=NoHostCopy(image(), device=(2, 0)), threshold=THRESHOLD)
    text = str(error.value)
    assert "'img'" in text and "CUDA device (2:0), where no node of this executable runs" in text
    assert "cross-device copies are not supported" in text and "tensor.cpu()" in text


def test_a_value_that_is_no_array_is_refused_naming_the_input(exe):
    class Broken:
        def __array__(self, *args, **kwargs):
            raise TypeError("cannot convert")

    with pytest.raises(ExecutionError, match="'img'.*cannot be read as an array: cannot convert"):
        exe(img=Broken(), threshold=THRESHOLD)


def test_a_torch_tensor_is_taken_as_it_is(exe):
    torch = pytest.importorskip("torch")
    img = torch.from_numpy(image())
    np.testing.assert_array_equal(exe(img=img, threshold=THRESHOLD)["edges"],
                                  exe(img=image(), threshold=THRESHOLD)["edges"])
    with pytest.raises(ExecutionError, match="'img'.*detach"):
        exe(img=img.clone().requires_grad_(), threshold=THRESHOLD)
