"""Arrays that live on a device (runtime/device_arrays.py), on a test
device of its own memory (the loopback target's LoopbackArray standing for
a torch CUDA tensor or a pyopencl array): inputs taken without a copy,
outputs left on the device, on every path a run takes (static schedule,
dynamic scheduler, captured replay, mixed placements), and the errors."""
import importlib.util
import weakref
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import ExecutionError, HpvmError
from hpvm.ir.text import parse_module
from hpvm.registry import Registry
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackArray, LoopbackPlugin, LoopbackTarget

_here = Path(__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"device_arrays_{name}", _here / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


programs = _load("programs")
static = _load("test_static_run")


def registry_of(*targets):
    registry = Registry(entry_points=[])
    for target in targets:
        registry.register(LoopbackPlugin(target), name=target.name)
    return registry


@pytest.fixture
def own():
    return registry_of(LoopbackTarget("own", claim_all=True))


def chain_result(a: np.ndarray) -> np.ndarray:
    return (a * 2 + 1) * 3


@pytest.mark.parametrize("task_parallelism", [False, True], ids=["static", "dynamic"])
def test_device_arrays_in_and_out_move_no_byte(own, task_parallelism):
    exe = compile(programs.chain(), targets=["own"], registry=own,
                  options={"task_parallelism": task_parallelism})
    assert (exe._static_program() is not None) == (not task_parallelism)
    rng = np.random.default_rng(0)
    outputs = []
    for _ in range(3):
        a = rng.standard_normal(16).astype(np.float32)
        x = exe.device_array(a)
        assert isinstance(x, LoopbackArray)
        out = exe(a=x, outputs="device")
        assert isinstance(out["b"], LoopbackArray)
        np.testing.assert_allclose(out["b"].get(), chain_result(a), rtol=1e-6)
        np.testing.assert_array_equal(x.get(), a)  # the input is never written
        assert exe.report().bytes_copied == 0
        outputs.append(out["b"])
    assert len({o.handle for o in outputs}) == 3  # each run hands over an array of its own


def test_outputs_stay_valid_after_later_runs(own):
    exe = compile(programs.chain(), targets=["own"], registry=own,
                  options={"task_parallelism": False})
    first = exe(a=np.ones(8, np.float32), outputs="device")["b"]
    exe(a=np.zeros(8, np.float32), outputs="device")
    np.testing.assert_allclose(first.get(), 9.0)


def test_host_inputs_and_device_outputs_copy_in_only(own):
    exe = compile(programs.chain(), targets=["own"], registry=own,
                  options={"task_parallelism": False})
    a = np.arange(8, dtype=np.float32)
    out = exe(a=a, outputs="device")
    np.testing.assert_allclose(out["b"].get(), chain_result(a))
    records = {r.node: r.copies for r in exe.report().records}
    assert records["<inputs>"].to_device == a.nbytes and records["<outputs>"].total == 0


def test_device_inputs_and_host_outputs_copy_out_only(own):
    exe = compile(programs.chain(), targets=["own"], registry=own,
                  options={"task_parallelism": False})
    a = np.arange(8, dtype=np.float32)
    out = exe(a=exe.device_array(a))
    assert isinstance(out["b"], np.ndarray)
    np.testing.assert_allclose(out["b"], chain_result(a))
    assert exe.report().bytes_copied == a.nbytes


@pytest.mark.parametrize("task_parallelism", [False, True], ids=["static", "dynamic"])
def test_an_input_updated_in_place_is_left_as_the_caller_gave_it(own, task_parallelism):
    exe = compile(programs.diamond(), targets=["own"], registry=own,
                  options={"task_parallelism": task_parallelism})
    a = np.arange(6, dtype=np.float32)
    x = exe.device_array(a)
    for _ in range(2):
        out = exe(a=x, outputs="device")
        np.testing.assert_allclose(out["c"].get(), a * 4)
        np.testing.assert_allclose(out["d"].get(), a * 2 + 1)
    np.testing.assert_array_equal(x.get(), a)


def test_a_captured_replay_copies_device_inputs_on_the_device():
    exe = compile(programs.chain(), targets=["capture"],
                  registry=registry_of(static.CapturingTarget("capture", claim_all=True)))
    device = exe._get_devices()["capture"]
    rng = np.random.default_rng(1)
    previous = None
    for _ in range(3):
        a = rng.standard_normal(16).astype(np.float32)
        out = exe(a=exe.device_array(a), outputs="device")
        np.testing.assert_allclose(out["b"].get(), chain_result(a), rtol=1e-6)
        assert exe.report().bytes_copied == 0
        if previous is not None:  # a replay's kept buffers are not handed out
            assert previous[1].handle != out["b"].handle
            np.testing.assert_allclose(previous[1].get(), chain_result(previous[0]), rtol=1e-6)
        previous = (a, out["b"])
    assert device.captures == 1 and device.replays == 3


class LentArray(LoopbackArray):
    """A kept buffer's memory lent to the caller: not freed with it."""

    def __del__(self):
        pass


class LendingDevice(static.CapturingDevice):
    """A capturing device that lends its replay's outputs (Device.lend),
    knowing them let go when the caller's array is gone."""

    def __init__(self, inner, name):
        super().__init__(inner, name)
        self.loans = {}

    def lend(self, handle):
        array = LentArray(self, handle)
        self.loans[handle] = weakref.ref(array)
        return array

    def lent(self, handle):
        loan = self.loans.get(handle)
        return loan is not None and loan() is not None


class LendingTarget(static.CapturingTarget):
    def load(self, artifact, options):
        return LendingDevice(super().load(artifact, options).inner, self.name)


@pytest.fixture
def lending():
    exe = compile(programs.chain(), targets=["lend"],
                  registry=registry_of(LendingTarget("lend", claim_all=True)))
    return exe, exe._get_devices()["lend"]


def test_a_loop_over_a_replay_takes_turns_between_two_lending_schedules(lending):
    exe, device = lending
    rng = np.random.default_rng(2)
    handles = set()
    out = None
    for _ in range(6):
        a = rng.standard_normal(16).astype(np.float32)
        out = exe(a=exe.device_array(a), outputs="device")["b"]  # the previous one held meanwhile
        assert isinstance(out, LentArray)
        np.testing.assert_allclose(out.get(), chain_result(a), rtol=1e-6)
        handles.add(out.handle)
    assert len(handles) == 2 and device.captures == 2 and device.replays == 6
    assert exe.report().bytes_copied == 0


def test_outputs_held_past_the_lending_schedules_are_copies_and_stay_valid(lending):
    exe, device = lending
    inputs = [np.full(8, float(i), np.float32) for i in range(5)]
    outputs = [exe(a=exe.device_array(a), outputs="device")["b"] for a in inputs]
    for a, out in zip(inputs, outputs):
        np.testing.assert_allclose(out.get(), chain_result(a))
    assert [isinstance(out, LentArray) for out in outputs] == [True, True, False, False, False]
    assert device.captures == 3  # two lending schedules and one that copies
    del outputs
    assert isinstance(exe(a=inputs[0], outputs="device")["b"], LentArray)


def test_host_outputs_of_a_lending_device_are_copied_out(lending):
    exe, _ = lending
    a = np.arange(8, dtype=np.float32)
    first = exe(a=a)["b"]
    exe(a=a + 1)
    np.testing.assert_allclose(first, chain_result(a))


class HoldingDevice(static.CapturingDevice):
    """A capturing device that knows an array passed again (Device.held:
    its handle, which the test keeps alive) and counts its copies."""

    def __init__(self, inner, name):
        super().__init__(inner, name)
        self.copies = 0

    def held(self, handle):
        return handle, handle

    def copy_buffer(self, to, source):
        self.copies += 1
        super().copy_buffer(to, source)


class HoldingTarget(static.CapturingTarget):
    def load(self, artifact, options):
        return HoldingDevice(super().load(artifact, options).inner, self.name)


def test_an_array_passed_again_is_read_by_the_replay_where_it_is():
    exe = compile(programs.chain(), targets=["hold"],
                  registry=registry_of(HoldingTarget("hold", claim_all=True)))
    device = exe._get_devices()["hold"]
    x = exe.device_array(np.zeros(16, np.float32))
    for value in range(4):
        device.store[x.handle][...] = value  # refilled in place between runs
        np.testing.assert_allclose(exe(a=x)["b"], chain_result(np.full(16, value)))
    assert device.copies == 2  # the first run's capture and replay; later runs read x
    y = exe.device_array(np.arange(16, dtype=np.float32))
    for _ in range(2):
        np.testing.assert_allclose(exe(a=y)["b"], chain_result(np.arange(16)))
        np.testing.assert_allclose(exe(a=x)["b"], chain_result(np.full(16, 3.0)))
    # y is copied the first time; from its second run on, the two arrays
    # taking turns are each read in place by a replay of its own
    assert device.copies == 2 + 1
    captures = device.captures
    for value in range(3):  # a fresh array each run: copied, nothing captured for it
        fresh = exe.device_array(np.full(16, value, np.float32))
        np.testing.assert_allclose(exe(a=fresh)["b"], chain_result(np.full(16, value)))
    assert device.copies == 3 + 3 and device.captures == captures


def test_a_device_input_read_on_another_device_is_copied_and_counted():
    registry = registry_of(LoopbackTarget("own"), LoopbackTarget("other"))
    module = programs.chain(hints=("other", "own", "own"))
    exe = compile(module, targets=["own", "other"], registry=registry)
    a = np.arange(8, dtype=np.float32)
    x = exe.device_array(a, target="own")
    out = exe(a=x, outputs="device")
    assert isinstance(out["b"], LoopbackArray) and out["b"].device.name == "own"
    np.testing.assert_allclose(out["b"].get(), chain_result(a))
    copies = {r.node: r.copies for r in exe.report().records}
    # s (on other) reads a from own's memory through the host; t reads s's result
    assert copies["s"].to_host == a.nbytes and copies["s"].to_device == a.nbytes
    assert exe.report().bytes_copied == 4 * a.nbytes


def test_outputs_of_a_host_memory_program_are_numpy_arrays():
    exe = compile(programs.chain(), targets=["interp"])
    a = np.arange(4, dtype=np.float32)
    out = exe(a=a, outputs="device")
    assert isinstance(out["b"], np.ndarray)
    np.testing.assert_allclose(out["b"], chain_result(a))


def test_run_takes_a_dict_and_launch_takes_outputs(own):
    exe = compile(programs.chain(), targets=["own"], registry=own)
    a = np.ones(4, np.float32)
    assert isinstance(exe.run({"a": a}, outputs="device")["b"], LoopbackArray)
    assert isinstance(exe.launch(a=a, outputs="device").wait()["b"], LoopbackArray)
    assert isinstance(exe.run({"a": a})["b"], np.ndarray)


def test_an_input_named_outputs_is_an_input():
    module = parse_module("""hpvm 1.0
module named

func @copy(in x: f32[N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  y[i] = x[i]
}

graph @main(in outputs: f32[N], out y: f32[N]) {
  node c = @copy [N]
  in outputs -> c.x
  out c.y -> y
}

root @main
""")
    exe = compile(module, targets=["interp"])
    np.testing.assert_array_equal(exe(outputs=np.ones(3, np.float32))["y"], 1.0)
    out = exe.run({"outputs": np.ones(3, np.float32)}, outputs="device")
    np.testing.assert_array_equal(out["y"], 1.0)


def test_an_unknown_outputs_place_is_refused(own):
    exe = compile(programs.chain(), targets=["own"], registry=own)
    with pytest.raises(HpvmError, match="outputs='gpu' is not one of 'host', 'device'"):
        exe(a=np.ones(4, np.float32), outputs="gpu")


def test_an_array_of_another_device_is_refused_naming_the_input(own):
    exe = compile(programs.chain(), targets=["own"], registry=own)
    elsewhere = compile(programs.chain(), targets=["own"],
                        registry=registry_of(LoopbackTarget("own", claim_all=True)))
    exe(a=exe.device_array(np.ones(4, np.float32)))  # the same signature passed before
    with pytest.raises(ExecutionError) as error:
        exe(a=elsewhere.device_array(np.ones(4, np.float32)))
    assert "'a'" in str(error.value) and "another loopback device" in str(error.value)
    assert "device_array" in str(error.value)


def test_a_device_array_of_the_wrong_dtype_or_rank_is_refused_naming_the_input(own):
    exe = compile(programs.chain(), targets=["own"], registry=own)
    with pytest.raises(ExecutionError, match="'a'.*expects dtype float32.*device array of "
                                             "float64"):
        exe(a=exe.device_array(np.ones(4)))
    with pytest.raises(ExecutionError, match="'a'"):
        exe(a=exe.device_array(np.ones((2, 2), np.float32)))


def test_device_array_needs_a_target_of_its_own_memory(own):
    with pytest.raises(HpvmError, match="every target of this executable works in host memory"):
        compile(programs.chain(), targets=["interp"]).device_array(np.ones(2, np.float32))
    two = compile(programs.chain(hints=("other", "own", "own")), targets=["own", "other"],
                  registry=registry_of(LoopbackTarget("own"), LoopbackTarget("other")))
    with pytest.raises(HpvmError, match="2 targets with memory of their own.*target="):
        two.device_array(np.ones(2, np.float32))
    with pytest.raises(HpvmError, match="'interp' is not a target of this executable"):
        two.device_array(np.ones(2, np.float32), target="interp")
