"""Bound runs (runtime/bound_run.py): ``exe.bind(...)`` fixes the input
objects and the output arrays; every call reads the inputs as they are
then, clears what a node writes in part, works on private copies of values
updated in place, and returns the same outputs, on host-memory devices and
on a device of its own memory; and the errors."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import ExecutionError, HpvmError
from hpvm.ir.text import parse_module
from hpvm.registry import Registry
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackArray, LoopbackPlugin, LoopbackTarget

_spec = importlib.util.spec_from_file_location(
    "bound_run_static", Path(__file__).with_name("test_static_run.py"))
static = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(static)

OWN = Registry(entry_points=[])
OWN.register(LoopbackPlugin(LoopbackTarget("own", claim_all=True)), name="own")
SERIAL = {"task_parallelism": False}
TARGETS = {"cpu": ("cpu", {}, None), "interp": ("interp", SERIAL, None),
           "own memory": ("own", SERIAL, OWN)}


@pytest.fixture(scope="module")
def module():
    return parse_module(static.PROGRAM)


def compiled(module, which):
    target, options, registry = TARGETS[which]
    return compile(module, targets=[target], options=options, registry=registry)


@pytest.mark.parametrize("which", TARGETS)
def test_each_call_reads_the_inputs_as_they_are_and_returns_the_same_outputs(module, which):
    exe = compiled(module, which)
    a = np.arange(32, dtype=np.float32)
    run = exe.bind(a=a, s=2.0)
    first = run()
    static.check(first, a, 2.0)  # accumulate reads zeros: cleared at every call
    for value in (3.0, -1.5):
        a[...] = np.linspace(value, 2 * value, a.size)
        outputs = run()
        static.check(outputs, a, 2.0)
        assert all(outputs[name] is first[name] for name in outputs) or which == "own memory"
    assert [r.node for r in exe.report().records if not r.node.startswith("<")] == \
        ["first", "second", "updater", "third", "updater2", "reader"]


def test_on_a_device_of_its_own_memory_the_outputs_stay_there(module):
    exe = compiled(module, "own memory")
    a = np.ones(8, np.float32)
    x = exe.device_array(a)
    run = exe.bind(a=x, s=0.5, outputs="device")
    first = run()
    assert all(isinstance(v, LoopbackArray) for v in first.values())
    static.check({k: v.get() for k, v in first.items()}, a, 0.5)
    x_new = np.full(8, 4.0, np.float32)
    x.device.store[x.handle][...] = x_new  # the caller refills the device array in place
    second = run()
    assert all(second[name] is first[name] for name in first)
    static.check({k: v.get() for k, v in second.items()}, x_new, 0.5)
    assert exe.report().bytes_copied == 0


def test_an_input_copied_on_the_way_in_is_copied_again_at_every_call(module):
    exe = compiled(module, "cpu")
    a = np.arange(16, dtype=np.float32)[::2]  # not dense: the program takes a copy
    run = exe.bind(a=a, s=1.0)
    static.check(run(), a, 1.0)
    a[...] = 5.0
    static.check(run(), a, 1.0)


def test_another_librarys_host_array_copied_on_the_way_in_is_copied_again_too(module):
    torch = pytest.importorskip("torch")
    exe = compiled(module, "cpu")
    a = torch.arange(16, dtype=torch.float32)[::2]  # not dense: the program takes a copy
    run = exe.bind(a=a, s=1.0)
    static.check(run(), a.numpy(), 1.0)
    a.fill_(5.0)
    static.check(run(), a.numpy(), 1.0)
    staged = exe.stage(a=np.ones(8, np.float32))  # the executable's own: read where it is
    static.check(exe.bind(**staged, s=2.0)(), np.ones(8, np.float32), 2.0)


def test_a_bound_run_runs_the_configuration_it_was_bound_to_and_not_a_goal(module):
    exe = compiled(module, "cpu")
    exe._goal = object()  # as set_goal leaves it
    with pytest.raises(HpvmError, match="latency goal.*set_goal"):
        exe.bind(a=np.ones(4, np.float32), s=1.0)


def test_bad_inputs_and_placements_off_the_static_schedule_are_refused(module):
    exe = compiled(module, "cpu")
    with pytest.raises(ExecutionError, match="missing input"):
        exe.bind(a=np.ones(4, np.float32))
    with pytest.raises(ExecutionError, match="'a'.*dtype"):
        exe.bind(a=np.ones(4, np.float64), s=1.0)
    dynamic = compile(module, targets=["interp"])  # task parallelism: the dynamic scheduler
    with pytest.raises(HpvmError, match="bind: .*interp.*dynamic scheduler.*fix"):
        dynamic.bind(a=np.ones(4, np.float32), s=1.0)


def test_on_a_device_that_captures_launches_a_call_is_one_replay():
    capturing = static.registry_of(static.CapturingTarget("capture", claim_all=True))
    exe = compile(static.programs.chain(), targets=["capture"], registry=capturing)
    device = exe._get_devices()["capture"]
    a = np.arange(16, dtype=np.float32)
    x = exe.device_array(a)
    captures = device.captures
    run = exe.bind(a=x, outputs="device")
    first = run()
    for value in (2.0, -1.0):
        x.device.store[x.handle][...] = value  # read where it is, or copied on the device
        out = run()
        assert all(out[name] is first[name] for name in out)
        for name, array in out.items():
            np.testing.assert_allclose(array.get(), (np.full(16, value) * 2 + 1) * 3)
    assert device.captures == captures + 1 and device.replays >= 3
    assert [r.node for r in exe.report().records] == ["<inputs>", "<captured graph>",
                                                       "<outputs>"]
