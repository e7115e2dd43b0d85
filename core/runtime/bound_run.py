"""Bound runs: a program's inputs and outputs fixed once, for loops that
call it again and again on the same buffers.

``run = exe.bind(x=..., outputs="device")`` checks the inputs, plans the
run and makes every buffer once; ``run()`` then runs the program on those
same input objects, as their contents are at that moment, and writes the
same output arrays, which every call returns: onnxruntime's I/O binding,
for a solver's iterations or frames refilled into one buffer.  A call
copies in the host arrays a device of its own memory reads, clears the
buffers a node writes only in part, launches the nodes in order (one
replay, where the device captures launches) and hands back the outputs:
no input checks, no recognition of a repeated call, no buffer made
(repeat_call.py does what can be done for plain calls).

What stays fixed: the input objects (a numpy array is read where it is, or
copied in at each call where the program's device has memory of its own;
an array on that device is read where it is), the scalars' values, the
configuration in use, and the output arrays, which the next call
overwrites (copy one to keep it).  Bound runs need the static schedule
(static_run.py): a program placed on host-memory devices, or wholly on
one device of its own memory; a call of a bound run is not thread-safe
with another call of the same bound run (calls are serialised).
"""
from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ..errors import HpvmError, Location
from .device_arrays import DEVICE_OUTPUTS
from .execution import NodeRecord, Report, target_label
from .inputs import host_array
from .memory import CopyStats, Value
from .static_planner import SchedulePlanner, StagedBuffer
from .static_run import RunSchedule, StaticProgram


class BoundRun:
    """What ``Executable.bind`` returns: ``run()`` runs the program on the
    bound inputs and returns the bound outputs (see the module text)."""

    def __init__(self, static: StaticProgram, given: dict[str, Any], checked: dict[str, Any],
                 outputs: str, on_report):
        self._schedule = BoundSchedule.make(static, checked, outputs == DEVICE_OUTPUTS
                                            and static.resident is not None)
        self._refreshed = [(value, source) for name, value in checked.items()
                           if isinstance(value, np.ndarray) and not isinstance(given[name], Value)
                           for source in [_host_view(given[name])]
                           if not np.may_share_memory(value, source)]
        """(the program's dense copy, the caller's array) of host arrays the
        check copied (not dense, or read-only; numpy's or another library's
        in host memory): copied again at each call."""
        self._inputs = checked
        self._on_report = on_report
        self._lock = threading.Lock()

    def __call__(self) -> dict[str, Any]:
        """One run on the bound inputs; returns the bound outputs by name."""
        with self._lock:
            for copy, array in self._refreshed:
                np.copyto(copy, array)
            report = Report()
            outputs = self._schedule.run(self._inputs, report)
            self._on_report(report)
            return outputs


class BoundSchedule(RunSchedule):
    """A static schedule (static_run.RunSchedule) whose every buffer is
    made when it is bound, the launches bound to them for good."""

    @classmethod
    def make(cls, static: StaticProgram, inputs: dict[str, Any],
             device_outputs: bool) -> "BoundSchedule":
        schedule = cls(static.plan, static.devices, static.module, static.resident,
                       static.captured, device_outputs)
        SchedulePlanner(schedule, inputs).plan()
        schedule._bind_all(inputs)
        return schedule

    def _bind_all(self, inputs: dict[str, Any]) -> None:
        """Every slot's buffer made (a resident device's copies of the host
        inputs, the values and private copies made in each run of a plain
        schedule), the constant nodes run, every launch bound to them."""
        device = self.resident
        values = list(self.kept)
        self.copied_in: list[tuple[str, int]] = []
        """Host inputs copied into the resident device's buffers at each call."""
        self.copied_across: list[tuple[int, Any]] = []
        """(slot, the caller's buffer) of device arrays a captured replay
        cannot read where they are: copied on the device at each call."""
        for name, slot in self.inputs:
            value = inputs[name]
            if device is not None and isinstance(value, np.ndarray):
                values[slot] = device.allocate(value.shape, value.dtype)
                self.copied_in.append((name, slot))
            elif self.captured is not None and isinstance(value, StagedBuffer):
                held = device.held(value.handle)
                values[slot] = device.allocate(value.shape, value.dtype) if held is None \
                    else held[1]
                if held is None:
                    self.copied_across.append((slot, value.handle))
            else:
                values[slot] = value.handle if isinstance(value, StagedBuffer) else value
        self.cleared: list[tuple[Any, int, Any]] = []
        """(device, slot, a zero-filled buffer to copy on a resident device
        or None) of the buffers a node writes in part: cleared at each call."""
        for fresh in self.fresh:
            made = fresh.device
            if made is None:  # written whole, in host memory
                values[fresh.slot] = np.empty(fresh.shape, fresh.dtype)
                continue
            values[fresh.slot] = made.empty(fresh.shape, fresh.dtype) if fresh.whole \
                else made.allocate(fresh.shape, fresh.dtype)
            if not fresh.whole and self.captured is None:  # captured: written whole
                zeros = None if made.host_memory else made.allocate(fresh.shape, fresh.dtype)
                self.cleared.append((made, fresh.slot, zeros))
        for slot in self.duplicates:  # private copies: copied into at each call
            values[slot] = device.empty(*self.layouts[slot])
        self.duplicates = set()
        for step in self.steps:
            step.changing = []
            launch = step.device.bind(step.plan.task.ref, {p: values[s] for p, s in step.ports})
            if step.plan.constant:
                step.device.wait(launch({}))
            else:
                step.launch = launch
        self.kept = values
        self.exports: dict[int, tuple[Any, Any]] = {}
        """Slot -> (its memory's ``Device.held`` key, the array exported)."""
        if self.captured is not None:
            self.replay = self.captured.capture(self._launch_all)
            self.replay_label = f"{target_label(self.plan.tasks[0].target, device)}: " \
                                f"{len(self.steps)} nodes, one replay"

    def _exported(self) -> dict[str, Any] | None:
        """The outputs as the resident device's arrays over the bound
        buffers (``Device.export``); None where it has no array type.

        A buffer is exported once and the array kept (an exported array
        owns its memory: the bound run keeps it alive and hands it out at
        every call), and again only where the device says the buffer's
        memory has changed since (``Device.held``: aten gives a buffer a
        new tensor at each launch it does not replay)."""
        device = self.resident
        outputs = {}
        for name, slot, _ in self.outputs:
            held = device.held(self.kept[slot])
            key = None if held is None else held[0]
            kept = self.exports.get(slot)
            if kept is None or kept[0] != key:
                array = device.export(self.kept[slot])
                if array is None:
                    return None
                kept = self.exports[slot] = (key, array)
            outputs[name] = kept[1]
        return outputs

    def run(self, inputs: dict[str, Any], report: Report) -> dict[str, Any]:
        values = self.kept
        device = self.resident
        if device is not None:
            stats = CopyStats()
            for name, slot in self.copied_in:
                device.copy_in(values[slot], inputs[name])
                stats.to_device += inputs[name].nbytes
            report.add_copies("<inputs>", stats, empty=True)
            for slot, handle in self.copied_across:
                device.copy_buffer(values[slot], handle)
        for made, slot, zeros in self.cleared:
            if zeros is None:
                made.clear(values[slot])
            else:
                made.copy_buffer(values[slot], zeros)
        if self.replay is not None:
            began = time.perf_counter()
            self.replay()
            report.records.append(NodeRecord("<captured graph>", self.replay_label,
                                             time.perf_counter() - began, CopyStats()))
        else:
            self._launch_steps(values, report)
        if device is None:
            return {name: values[slot] for name, slot, _ in self.outputs}
        exported = self._exported() if self.device_outputs else None
        if exported is not None:
            report.records.append(NodeRecord("<outputs>", "device", 0.0, CopyStats()))
            return exported
        return self._outputs(values, report)  # copied to the host, as a plain run's


def _host_view(value) -> np.ndarray:
    """An input in host memory as a numpy array over its memory (as the
    input check took it: numpy, or another library's through DLPack)."""
    return value if isinstance(value, np.ndarray) else host_array(value, Location())


def no_static_schedule(targets: list[str]) -> HpvmError:
    """The error of ``bind`` on a program the static schedule cannot run."""
    return HpvmError(
        f"bind: this program's placement ({', '.join(targets)}) runs on the dynamic "
        "scheduler, which a bound run cannot fix ahead (fix: call the executable as usual "
        "(repeated calls on the same arrays are recognised), or compile it for one target, "
        "or with task_parallelism=False)")
