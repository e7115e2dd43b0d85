"""Host arrays placed for the vector units (core/host_arrays.py): the
runtime's buffers start on a cache line, at offsets into their pages that
differ from one buffer to the next, whatever malloc's heap looks like."""
import numpy as np
import pytest

from hpvm.host_arrays import LINE, MIN_BYTES, PAGE, aligned_empty, aligned_zeros
from hpvm.target import HostMemoryDevice


@pytest.mark.parametrize("make", [aligned_empty, aligned_zeros])
@pytest.mark.parametrize("shape,dtype", [((MIN_BYTES // 4,), np.float32),
                                         ((3, 1000, 7), np.float64), ((MIN_BYTES + 3,), np.uint8)])
def test_large_arrays_start_on_a_line_at_a_new_offset_into_their_page(make, shape, dtype):
    offsets = []
    for _ in range(8):  # whatever malloc hands out underneath
        array = make(shape, dtype)
        assert array.shape == shape and array.dtype == dtype and array.flags.c_contiguous
        assert array.ctypes.data % LINE == 0 and array.flags.writeable
        array[...] = 1
        assert array.sum() == array.size
        offsets.append(array.ctypes.data % PAGE)
    assert len(set(offsets)) == 8


def test_small_arrays_are_as_numpy_makes_them():
    assert aligned_zeros((3,), np.int32).tolist() == [0, 0, 0]
    assert aligned_empty((5, 2), np.float32).shape == (5, 2)


def test_zeros_are_zero_and_host_devices_allocate_them():
    np.testing.assert_array_equal(aligned_zeros((512, 513), np.float32), 0)
    allocated = HostMemoryDevice().allocate((1024, 1024), np.float32)
    assert allocated.ctypes.data % LINE == 0 and not allocated.any()
