"""A call repeating the one before (runtime/repeat_call.py): taken as that
one was, without checking its inputs again, only while they are the same
objects, unchanged; any change takes the full path and gets its answer or
its error."""
import gc
import importlib.util
import weakref
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import HpvmError
from hpvm.ir.text import parse_module
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackArray

_spec = importlib.util.spec_from_file_location(
    "repeat_call_device_arrays", Path(__file__).with_name("test_device_arrays.py"))
arrays = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(arrays)
programs, static = arrays.programs, arrays.static


@pytest.fixture
def host():
    """The static run's program, on the interpreter (host memory)."""
    return compile(parse_module(static.PROGRAM), targets=["interp"],
                   options={"task_parallelism": False})


def checked_in_full(exe, monkeypatch) -> list:
    """The calls of ``exe`` checked in full from now on (appended to)."""
    calls, check = [], exe._checked
    monkeypatch.setattr(exe, "_checked", lambda inputs: calls.append(inputs) or check(inputs))
    return calls


def test_a_call_on_the_same_arrays_refilled_in_place_is_run_again(host, monkeypatch):
    a = np.arange(16, dtype=np.float32)
    static.check(host(a=a, s=2.0), a, 2.0)
    assert len(host._static_program().recent) == 1
    checks = checked_in_full(host, monkeypatch)
    for value in (3.0, -1.0):
        a[...] = value
        static.check(host(a=a, s=2.0), a, 2.0)  # the scalar is the same object (a constant)
    assert checks == []
    assert [r.node for r in host.report().records][0] == "first"  # this run's report


@pytest.mark.parametrize("change", ["other array", "reshaped", "read-only", "other scalar",
                                    "missing", "extra"])
def test_any_change_to_the_inputs_is_checked_in_full(host, change):
    a = np.arange(16, dtype=np.float32)
    s = 2.0
    host(a=a, s=s)
    inputs = {"a": a, "s": s}
    if change == "other array":
        inputs["a"] = a + 1
    elif change == "reshaped":  # the same object, now of another shape
        a.resize((2, 8), refcheck=False)
    elif change == "read-only":  # the same object, now copied on the way in
        a.setflags(write=False)
    elif change == "other scalar":
        inputs["s"] = -3.0
    elif change == "missing":
        del inputs["s"]
    else:
        inputs["bogus"] = a
    if change in ("reshaped", "missing", "extra"):
        with pytest.raises(HpvmError, match="'a'|'s'|bogus"):
            host(**inputs)
        return
    static.check(host(**inputs), inputs["a"], inputs["s"])


def test_keeping_the_last_call_keeps_no_array_alive(host):
    a = np.ones(8, np.float32)
    host(a=a, s=1.0)
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None
    b = np.ones(8, np.float32)
    static.check(host(a=b, s=1.0), b, 1.0)


def test_calls_from_several_threads_each_get_their_own_results(host):
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        arrays = [rng.standard_normal(16).astype(np.float32) for _ in range(2)]
        for _ in range(20):
            for a in arrays:  # each thread's arrays, taking turns
                a[...] = rng.standard_normal(16)
                try:
                    static.check(host(a=a, s=2.0), a, 2.0)
                except Exception as error:  # noqa: BLE001 (reported below)
                    failures.append(error)
    static.run_side_by_side(worker, range(4))
    assert not failures


def holding():
    exe = compile(programs.chain(), targets=["hold"],
                  registry=arrays.registry_of(arrays.HoldingTarget("hold", claim_all=True)))
    return exe, exe._get_devices()["hold"]


def test_a_device_array_read_in_place_is_recognised_again_until_it_moves(monkeypatch):
    exe, device = holding()
    checks = checked_in_full(exe, monkeypatch)
    x = exe.device_array(np.zeros(16, np.float32))
    for value in (0.0, 0.0, 1.0, 2.0):
        device.store[x.handle][...] = value
        np.testing.assert_allclose(exe(a=x)["b"], chain_result(value))
    # the first call copies x in; the second is checked again, so that the
    # replay reads x in place from then on
    assert len(checks) == 2 and device.copies == 2
    moved = device.allocate((16,), np.float32)  # the same object over other memory
    device.store[moved][...] = 5.0
    x.handle = moved
    np.testing.assert_allclose(exe(a=x)["b"], chain_result(5.0))
    assert len(checks) == 3


def test_device_arrays_taking_turns_are_recognised_again(monkeypatch):
    exe, device = holding()
    checks = checked_in_full(exe, monkeypatch)
    x = exe.device_array(np.full(16, 1.0, np.float32))
    y = exe.device_array(np.full(16, 2.0, np.float32))
    for value, array in ((1.0, x), (2.0, y)) * 4:
        np.testing.assert_allclose(exe(a=array)["b"], chain_result(value))
    # each checked the first time (copied in) and the second (from then on
    # read in place by a replay of its own, SchedulePool.key)
    assert len(checks) == 4
    assert device.copies == 1 + 2  # the first capture's, and the first run of each


def test_three_device_arrays_taking_turns_are_recognised_and_copied_in(monkeypatch):
    exe, device = holding()
    checks = checked_in_full(exe, monkeypatch)
    arrays = [exe.device_array(np.full(16, float(v), np.float32)) for v in range(3)]
    for _ in range(3):
        for value, array in enumerate(arrays):
            np.testing.assert_allclose(exe(a=array)["b"], chain_result(value))
    assert len(checks) == 3
    assert device.copies == 1 + 9  # the capture's, and each run's into the replay's buffer


def test_an_array_the_device_cannot_read_in_place_is_copied_in_every_repeat(monkeypatch):
    exe = compile(programs.chain(), targets=["capture"],
                  registry=static.registry_of(static.CapturingTarget("capture", claim_all=True)))
    checks = checked_in_full(exe, monkeypatch)
    x = exe.device_array(np.ones(16, np.float32))
    device = exe._get_devices()["capture"]
    for value in (1.0, 4.0, 6.0):
        device.store[x.handle][...] = value
        np.testing.assert_allclose(exe(a=x)["b"], chain_result(value))
    assert len(checks) == 1
    assert isinstance(x, LoopbackArray)


def chain_result(value: float) -> np.ndarray:
    return np.full(16, (value * 2 + 1) * 3, np.float32)
