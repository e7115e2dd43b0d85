"""The transfer modes' choices and the threaded host copy (no device needed)."""
import numpy as np
import pytest

from hpvm.errors import TargetError
from hpvm_opencl import transfers


@pytest.mark.parametrize("kind, mode", [("GPU", "pinned"), ("ACCELERATOR", "pinned"),
                                        ("CPU", "copy"), ("CPU, GPU", "copy")])
def test_auto_stages_through_pinned_memory_except_on_cpu_devices(kind, mode):
    assert transfers.resolved_mode("auto", kind) == mode


def test_a_chosen_mode_is_kept_and_an_unknown_one_named():
    assert transfers.resolved_mode("map", "GPU") == "map"
    with pytest.raises(TargetError, match="transfer='teleport' is not one of auto, copy"):
        transfers.resolved_mode("teleport", "GPU")


@pytest.mark.parametrize("nbytes", [0, 1, 63, 64, 1000, 4099])
def test_the_threaded_copy_copies_every_byte(nbytes, monkeypatch):
    monkeypatch.setattr(transfers, "PIECE_BYTES", 64)   # several threads at these sizes
    monkeypatch.setattr(transfers, "available_cores", lambda: 3, raising=False)
    source = np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8)
    target = np.zeros_like(source)
    transfers.parallel_copy(target, source)
    np.testing.assert_array_equal(target, source)


def test_only_contiguous_arrays_are_staged():
    with pytest.raises(ValueError, match="C-contiguous"):
        transfers._bytes_of(np.zeros((4, 4), np.float32)[:, ::2])
