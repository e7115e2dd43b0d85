"""The memory-tracker contract.

The runtime shim's Device: ``allocate`` returns zero-filled buffers (also
when memory is reused), ``copy_in``/``copy_out`` round-trip every dtype,
``copy_out`` returns a snapshot, ``duplicate`` makes an independent copy.
Across devices (the target and the battery's ``sdk_loopback`` device, which
has memory of its own): results are right, only values that cross devices
are copied, and an in-place update never disturbs another reader.
"""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm_sdk.conformance.graphs import diamond
from hpvm_sdk.conformance.harness import LOOPBACK

DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8,
          np.uint32, np.bool_]
SHAPE = (3, 5)
N = 64
FLOAT_BYTES = 4 * N


@pytest.fixture(scope="module")
def device(hpvm_target):
    """A Device of the target, loaded from an artifact for a small chain."""
    return hpvm_target.device()


def _values(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-100, 100, SHAPE) if np.dtype(dtype).kind == "f"
            else rng.integers(0, 100, SHAPE)).astype(dtype)


def _read(device, handle, dtype):
    data = np.asarray(device.copy_out(handle))
    assert data.dtype == np.dtype(dtype), f"copy_out gave {data.dtype} for a {np.dtype(dtype)} buffer"
    return data.reshape(SHAPE)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_allocate_returns_zero_filled_buffers(device, dtype):
    for _ in range(3):  # also when freed memory is handed out again
        handle = device.allocate(SHAPE, np.dtype(dtype))
        assert not _read(device, handle, dtype).any(), "allocate() must zero-fill"
        device.copy_in(handle, _values(dtype))
        device.free(handle)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_copy_in_then_copy_out_round_trips(device, dtype):
    handle = device.allocate(SHAPE, np.dtype(dtype))
    device.copy_in(handle, _values(dtype))
    np.testing.assert_array_equal(_read(device, handle, dtype), _values(dtype))
    device.free(handle)


def test_copy_out_returns_a_snapshot(device):
    handle = device.allocate(SHAPE, np.dtype(np.float32))
    device.copy_in(handle, _values(np.float32, seed=1))
    before = _read(device, handle, np.float32)
    device.copy_in(handle, _values(np.float32, seed=2))
    np.testing.assert_array_equal(before, _values(np.float32, seed=1))
    device.free(handle)


def test_duplicate_is_an_independent_copy(device):
    original = device.allocate(SHAPE, np.dtype(np.int32))
    device.copy_in(original, _values(np.int32, seed=1))
    copy = device.duplicate(original, SHAPE, np.dtype(np.int32))
    device.copy_in(original, _values(np.int32, seed=2))
    np.testing.assert_array_equal(_read(device, copy, np.int32), _values(np.int32, seed=1))
    np.testing.assert_array_equal(_read(device, original, np.int32), _values(np.int32, seed=2))
    device.free(copy)
    device.free(original)


def _vector():
    return np.random.default_rng(7).uniform(-1, 1, N).astype(np.float32)


def _run_chain(hpvm_target, hints):
    module = hpvm_target.chain(hints)
    exe = hpvm_target.compile(module, targets=[hpvm_target.name, LOOPBACK])
    hpvm_target.require_placed(exe, "s", "t", "u")
    inputs = {"a": _vector()}
    hpvm_target.assert_close(exe(**inputs), run_module(module, inputs))
    report = exe.report()
    exe.close()
    return report, {record.node: record.copies for record in report.records}


def test_split_program_copies_only_what_crosses_devices(hpvm_target, device):
    name = hpvm_target.name
    report, copies = _run_chain(hpvm_target, (name, LOOPBACK, name))
    own = 0 if device.host_memory else FLOAT_BYTES  # a device with memory of its own
    assert copies["s"].to_device == own, "the input moves to the target once"
    assert copies["t"].to_device == FLOAT_BYTES and copies["t"].to_host == own
    assert copies["u"].to_host == FLOAT_BYTES and copies["u"].to_device == own
    assert report.bytes_copied == 2 * FLOAT_BYTES + 4 * own
    assert hpvm_target.loopback.devices[-1].store == {}, "loopback buffers were not freed"


def test_consecutive_nodes_on_the_target_keep_data_there(hpvm_target, device):
    name = hpvm_target.name
    report, _ = _run_chain(hpvm_target, (name, name, name))
    assert report.bytes_copied == (0 if device.host_memory else 2 * FLOAT_BYTES)


@pytest.mark.parametrize("where", ["TTT", "TLT", "LTT", "TTL"])
def test_in_place_update_does_not_disturb_another_reader(hpvm_target, where):
    hpvm_target.require_kernels()
    hints = tuple(hpvm_target.name if c == "T" else LOOPBACK for c in where)
    exe = hpvm_target.compile(diamond(hints), targets=[hpvm_target.name, LOOPBACK])
    hpvm_target.require_placed(exe, "copy", "reader", "updater")
    a = _vector()
    out = exe(a=a)
    np.testing.assert_allclose(out["c"], a * 4, rtol=1e-6)
    np.testing.assert_allclose(out["d"], a * 2 + 1, rtol=1e-6)
    exe.close()


def test_user_arrays_are_never_modified(hpvm_target):
    hpvm_target.require_kernels()
    name = hpvm_target.name
    exe = hpvm_target.compile(diamond((name, name, name)))
    hpvm_target.require_placed(exe, "copy", "reader", "updater")
    a = _vector()
    before = a.copy()
    exe(a=a)
    np.testing.assert_array_equal(a, before)
    exe.close()


def test_exported_arrays_are_taken_back_over_the_same_memory(device):
    """Device arrays (runtime/device_arrays.py): what ``export`` hands the
    caller, ``adopt`` takes back as a buffer with the same values."""
    if device.host_memory:
        pytest.skip("works in host memory: outputs are numpy arrays")
    handle = device.allocate(SHAPE, np.dtype(np.float32))
    device.copy_in(handle, _values(np.float32, seed=3))
    exported = device.export(handle)
    if exported is None:
        pytest.skip("the device has no array type of its own (export returns None)")
    adopted = device.adopt(exported)
    assert adopted is not None, "adopt() must take back what export() made"
    taken, shape, dtype = adopted
    assert tuple(shape) == SHAPE and np.dtype(dtype) == np.float32
    np.testing.assert_array_equal(_read(device, taken, np.float32), _values(np.float32, seed=3))
    assert device.adopt(_values(np.float32)) is None, "a numpy array is the runtime's to copy"


def test_device_outputs_feed_the_next_call_without_copies(hpvm_target, device):
    name = hpvm_target.name
    module = hpvm_target.chain((name, name, name))
    exe = hpvm_target.compile(module, targets=[name])
    hpvm_target.require_placed(exe, "s", "t", "u")
    a = _vector()
    first = exe(a=a, outputs="device")["b"]
    second = exe(a=first, outputs="device")["b"]
    expected = run_module(module, {"a": run_module(module, {"a": a})["b"]})["b"]
    host = second if isinstance(second, np.ndarray) else exe(a=first)["b"]
    hpvm_target.assert_close({"b": host}, {"b": expected})
    if not device.host_memory and device.export(device.allocate((1,), np.float32)) is not None:
        exe(a=first, outputs="device")
        assert exe.report().bytes_copied == 0, "device arrays in and out must not be copied"
    exe.close()
