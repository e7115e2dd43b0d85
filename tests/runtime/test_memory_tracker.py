import numpy as np

from hpvm.runtime.memory import HOST, CopyStats, MemoryTracker
from hpvm.target import Device


class RemoteDevice(Device):
    """A device with its own memory: handles are ids into a private store."""

    def __init__(self, name):
        self.name = name
        self.store = {}

    def allocate(self, shape, dtype):
        handle = len(self.store)
        self.store[handle] = np.zeros(shape, dtype)
        return handle

    def copy_in(self, handle, array):
        self.store[handle][...] = array

    def copy_out(self, handle):
        return self.store[handle].copy()

    def free(self, handle):
        del self.store[handle]


class HostDevice(Device):
    host_memory = True


def tracker_with_devices():
    remote = RemoteDevice("gpu")
    return MemoryTracker({"gpu": remote, "cpu": HostDevice()}), remote


def test_no_copy_when_the_value_already_lives_on_the_device():
    tracker, _ = tracker_with_devices()
    value = tracker.from_host(np.ones(4, np.float32), consumers=1)
    stats = CopyStats()
    assert tracker.acquire(value, "cpu", stats) is value.copies[HOST]
    assert stats.total == 0 and tracker.bytes_copied == 0


def test_a_copy_to_another_device_happens_once_and_is_counted():
    tracker, remote = tracker_with_devices()
    value = tracker.from_host(np.ones(4, np.float32), consumers=2)
    stats = CopyStats()
    first = tracker.acquire(value, "gpu", stats)
    second = tracker.acquire(value, "gpu", stats)
    assert first == second and stats.to_device == 16 and tracker.bytes_copied == 16
    np.testing.assert_array_equal(remote.store[first], np.ones(4))


def test_values_produced_on_a_device_are_read_back_only_for_the_host():
    tracker, remote = tracker_with_devices()
    handle = remote.allocate((3,), np.int32)
    remote.copy_in(handle, np.array([1, 2, 3], np.int32))
    value = tracker.produced("gpu", handle, (3,), np.int32, consumers=2)
    stats = CopyStats()
    assert tracker.acquire(value, "gpu", stats) == handle and stats.total == 0
    np.testing.assert_array_equal(tracker.acquire(value, "cpu", stats), [1, 2, 3])
    assert stats.to_host == 12


def test_update_duplicates_a_value_others_still_need():
    tracker, remote = tracker_with_devices()
    value = tracker.from_host(np.zeros(2, np.float64), consumers=2, pinned=False)
    stats = CopyStats()
    original = tracker.acquire(value, "gpu", stats)
    private = tracker.acquire_for_update(value, "gpu", stats)
    assert private != original
    tracker.release(value)
    assert tracker.acquire_for_update(value, "gpu", stats) == original


def test_pinned_user_arrays_are_never_updated_in_place():
    tracker, _ = tracker_with_devices()
    user = np.zeros(2)
    value = tracker.from_host(user, consumers=1)
    handle = tracker.acquire_for_update(value, "cpu", CopyStats())
    handle[:] = 7
    assert not user.any()


def test_the_last_release_frees_device_copies():
    tracker, remote = tracker_with_devices()
    value = tracker.from_host(np.zeros(2), consumers=1, pinned=False)
    tracker.acquire(value, "gpu", CopyStats())
    assert remote.store
    tracker.release(value)
    assert not remote.store
