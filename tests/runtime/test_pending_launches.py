"""A program wholly on a device with ordered launches (runtime/
pending_launches.py): its static schedule waits only where the host must
see the device's work, records the device's own times, and gets the same
results as waiting after every launch, on a device whose launches really
wait in a queue until waited for."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir.text import parse_module
from hpvm.runtime import compile
from hpvm.runtime.loopback import LoopbackDevice, LoopbackTarget

_spec = importlib.util.spec_from_file_location(
    "static_run_tests", Path(__file__).with_name("test_static_run.py"))
static_run_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(static_run_tests)
PROGRAM, check, registry_of = (static_run_tests.PROGRAM, static_run_tests.check,
                               static_run_tests.registry_of)

CHAIN = PROGRAM.split("graph @main")[0] + """graph @main(in a: f32[N], in s: f32,
                                                     out c: f32[N]) {
  node first = @scale [N]
  node second = @scale [N]
  node third = @scale [N]
  edge first.y -> second.x all-to-all
  edge second.y -> third.x all-to-all
  in a -> first.x
  in s -> first.s
  in s -> second.s
  in s -> third.s
  out third.y -> c
}

root @main
"""
KERNEL_SECONDS = 0.25


class QueueDevice(LoopbackDevice):
    """Launches wait in an in-order queue and run only when a wait reaches
    them, as on an OpenCL queue; a clear, copy or read runs at once, so
    one made before the launches it follows were waited for sees stale
    buffers."""

    ordered_launches = True

    def __init__(self, inner, name):
        super().__init__(inner, name)
        self.queued: list = []
        self.waits = 0
        self.failing: str | None = None

    def launch(self, node, args):
        event = object()
        self.queued.append((event, node, dict(args)))
        return event

    def wait(self, event) -> None:
        self.waits += 1
        while self.queued:
            done, node, args = self.queued.pop(0)
            if node.node == self.failing:
                raise RuntimeError("kernel faulted")
            super().launch(node, args)
            if done is event:
                return

    def elapsed(self, event) -> float:
        return KERNEL_SECONDS


class QueueTarget(LoopbackTarget):
    def load(self, artifact, options):
        device = QueueDevice(super().load(artifact, options).inner, self.name)
        self.devices.append(device)
        return device


@pytest.fixture
def queue_registry():
    return registry_of(QueueTarget("queue", claim_all=True))


def _compile(text: str, registry):
    exe = compile(parse_module(text), targets=["queue"], registry=registry,
                  options={"task_parallelism": False})
    return exe, exe._get_devices()["queue"]


def test_a_chain_waits_once_a_run_and_records_the_devices_times(queue_registry):
    exe, device = _compile(CHAIN, queue_registry)
    rng = np.random.default_rng(0)
    for n, s in ((16, 2.0), (16, -1.0), (5, 0.5)):
        a = rng.standard_normal(n).astype(np.float32)
        device.waits = 0
        np.testing.assert_allclose(exe(a=a, s=s)["c"], a * np.float32(s) ** 3, rtol=1e-5)
        assert device.waits == 1 and not device.queued
        records = [r for r in exe.report().records if not r.node.startswith("<")]
        assert [(r.node, r.seconds) for r in records] == \
            [(name, KERNEL_SECONDS) for name in ("first", "second", "third")]


def test_updates_in_place_and_outputs_read_the_waited_results(queue_registry):
    exe, device = _compile(PROGRAM, queue_registry)
    rng = np.random.default_rng(1)
    for n, s in ((32, 2.0), (32, -0.5), (9, 3.0)):
        a = rng.standard_normal(n).astype(np.float32)
        check(exe(a=a, s=s), a, s)
        assert not device.queued


def test_a_failure_seen_by_the_wait_names_a_node_and_leaves_nothing_queued(queue_registry):
    exe, device = _compile(CHAIN, queue_registry)
    device.failing = "second"
    with pytest.raises(ExecutionError, match="node 'third'.*failed while running it.*faulted"):
        exe(a=np.ones(8, np.float32), s=1.0)
    device.failing = None
    device.queued.clear()   # the faulted launch's successors, as a lost device's queue
    np.testing.assert_allclose(exe(a=np.ones(8, np.float32), s=2.0)["c"], 8.0)
