"""The static schedule: a whole run planned once, for placements whose
devices all work in host memory, or that run wholly on one device.

When every node runs on a host-memory device (cpu, interp, aten on the CPU
...), nothing is ever copied between devices and the order of the nodes can
be fixed ahead.  :class:`StaticProgram` plans, once per input signature
(array shapes and integer scalars), where every value lives: in the run's
inputs, in an arena of buffers kept from run to run (a dead intermediate's
buffer is taken by a later one of the same shape and type), or in arrays
made for each run: the program's outputs (handed to the caller) and values
of PER_RUN_BYTES or more (static_planner.py works the slots out).  Those
written whole come from an OutputPool, which reuses their memory once the
caller drops them (output_pool.py).
Every launch is bound to its buffers once (``Device.bind``).  A run then
zero-fills the arena buffers it writes (outputs start zeroed, as
``Device.allocate`` promises), points the launches at this run's inputs and
outputs, and launches the nodes in order: no scheduler, memory tracker or
per-node planning.  Constant nodes run once, when the schedule is made.

Nodes run one after another, so the schedule is used where that loses
nothing: task parallelism is off, or every device's launch already uses
every core (``Device.multicore_launch``).  A program placed wholly on one
device of its own memory (the *resident* device: gpu_opencl, aten on CUDA)
keeps its values there: input buffers and the buffers of values their
node writes whole are made once, other values are made (cleared) in each
run; a run copies the inputs in, launches the nodes in order and copies
the outputs out.  Where that device can capture launches
(``graph_capture``: aten on CUDA records a CUDA graph), every buffer is
kept and the launches run as one replay.  Staged inputs
(``Executable.stage``) are used where they are, host array or resident
buffer, never copied in.  Streaming, staged inputs with captured launches
and other placements run on the dynamic scheduler (execution.py).
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from ..errors import Diagnostic, ExecutionError, HpvmError, Location
from ..ir.graph import Module
from ..target import Device
from .device_arrays import DEVICE_OUTPUTS, HOST_OUTPUTS
from .execution import NodeRecord, Report, launch_failure, target_label
from .memory import HOST, CopyStats, Value
from .output_pool import OutputPool
from .pending_launches import PendingLaunches
from .repeat_call import RecentCalls, RepeatCall
from .schedule_pool import SchedulePool
from .static_planner import Schedule, SchedulePlanner, StagedBuffer
from .task_plan import SCALAR, UPDATE, ProgramPlan


def static_schedule_fits(plan: ProgramPlan, devices: dict[str, Device], serial: bool) -> bool:
    """Whether runs of ``plan`` may use a :class:`StaticProgram`."""
    used = [devices[task.target] for task in plan.tasks]
    if not used or any(not o.param.is_buffer for task in plan.tasks for o in task.outputs):
        return False
    if all(d.host_memory for d in used):
        return serial or all(d.multicore_launch for d in used)
    device = resident_device(plan, devices)
    return device is not None and (captured_device(plan, devices) is not None or serial
                                   or device.multicore_launch)


def resident_device(plan: ProgramPlan, devices: dict[str, Device]) -> Device | None:
    """The device of its own memory that holds every value of ``plan``'s
    runs, every node being placed on it; None otherwise."""
    targets = {task.target for task in plan.tasks}
    device = devices[next(iter(targets))] if len(targets) == 1 else None
    return device if device is not None and not device.host_memory else None


def captured_device(plan: ProgramPlan, devices: dict[str, Device]) -> Device | None:
    """The device whose captured launches run the whole of ``plan``: the
    resident device, when it has ``graph_capture`` and no node reads a
    scalar (a captured launch keeps its scalars) or updates a value in
    place; None otherwise."""
    device = resident_device(plan, devices)
    if device is None or not device.graph_capture:
        return None
    roles = {role for task in plan.tasks for _, _, role in task.arguments}
    return device if not roles & {SCALAR, UPDATE} else None


class StaticProgram:
    """Runs of one executable's plan through static schedules."""

    def __init__(self, plan: ProgramPlan, devices: dict[str, Device], module: Module):
        self.plan = plan
        self.devices = devices
        self.module = module
        self.resident = resident_device(plan, devices)
        """The device holding every value of a run, or None (host memory)."""
        self.captured = captured_device(plan, devices)
        """The device running the whole plan as one captured replay, or None."""
        self.schedules = SchedulePool(self.resident, self.captured)
        """The schedules kept between runs (schedule_pool.py)."""
        self.recent = RecentCalls()
        """The last calls, to recognise one repeated (repeat_call.py)."""

    def staged_inputs(self, inputs: dict[str, Any]) -> dict[str, Any] | None:
        """``inputs`` with every staged value (``Executable.stage``, or an
        array of the caller's on the device) as the schedule takes it: its
        host array, or its buffer on the resident device (a captured replay
        copies it into the buffer it reads, on the device); None where one
        has no copy there."""
        place = HOST if self.resident is None else self.plan.tasks[0].target
        taken = {}
        for name, value in inputs.items():
            if isinstance(value, Value):
                if place not in value.copies:
                    return None
                copy = value.copies[place]
                value = copy if place == HOST else StagedBuffer(copy, value.shape, value.dtype)
            taken[name] = value
        return taken

    def run(self, inputs: dict[str, Any], report: Report, outputs: str = HOST_OUTPUTS,
            given: dict[str, Any] | None = None,
            donated: frozenset[str] = frozenset()) -> dict[str, Any]:
        """Outputs of one run on checked ``inputs`` (numpy arrays and
        scalars, or buffers staged on the resident device); the per-node
        records go to ``report``.  ``outputs``: where the outputs go
        (device_arrays.OUTPUT_PLACES).  ``given``: the inputs as the caller
        passed them, kept to recognise a call repeating this one
        (repeat_call.py).  ``donated``: host arrays among ``inputs`` that
        a node may update in place (donation.py; host-memory runs only)."""
        device_outputs = self._device_outputs(outputs)
        key, held = self.schedules.key(inputs, device_outputs)
        key += (donated if self.resident is None else frozenset(),)
        result = self._run(key, held, inputs, report, device_outputs)
        if given is not None:
            self.recent.keep(given, RepeatCall.of(given, inputs, outputs, key, held,
                                                  self.resident, self.captured is not None))
        return result

    def run_again(self, given: dict[str, Any], report: Report, outputs: str) -> dict | None:
        """Outputs of a run on the caller's ``given`` inputs when they repeat
        the last call kept (repeat_call.py), taken as it took them; None
        otherwise (check them and :meth:`run`)."""
        found = self.recent.taken(given, outputs)
        if found is None:
            return None
        repeat, inputs = found
        return self._run(repeat.key, repeat.held, inputs, report, self._device_outputs(outputs))

    def _device_outputs(self, outputs: str) -> bool:
        """Whether ``outputs`` leaves the run's outputs on the resident device."""
        return outputs == DEVICE_OUTPUTS and self.resident is not None

    def _run(self, key: tuple, held: dict[str, Any], inputs: dict[str, Any], report: Report,
             device_outputs: bool) -> dict[str, Any]:
        schedule, lends = self.schedules.take(key)
        if schedule is None:
            schedule = RunSchedule.make(self.plan, self.devices, self.module, self.resident,
                                        self.captured, inputs, device_outputs, lends, held,
                                        donated=key[-1])
        try:
            return schedule.run(inputs, report)
        finally:
            self.schedules.give_back(key, schedule)


class RunSchedule(Schedule):
    """A planned run (static_planner.Schedule) that runs: it binds the
    devices' launches once and makes its per-run host arrays from a pool."""

    def __init__(self, plan: ProgramPlan, devices: dict[str, Device], module: Module,
                 resident: Device | None, captured: Device | None, device_outputs: bool):
        super().__init__(plan, devices, module, resident, captured, device_outputs)
        self.replay: Callable[[], None] | None = None
        self.replay_label = ""
        """The run report's target of a replay (made with it)."""
        self.pool = OutputPool()
        """Memory of the host arrays made per run (output_pool.py)."""
        self.lends = False
        """A captured schedule's outputs are lent to the caller
        (``Device.lend``), not copied: it replays only once they are let go."""
        self.lendable: set[int] = set()
        """Slots of a captured schedule whose buffer a launch writes whole."""
        self.lent: set[int] = set()
        """The slots whose memory the last run lent."""
        self.held: dict[str, Any] = {}
        """Inputs a captured replay reads where the caller keeps them (name
        -> a buffer over the caller's array, ``Device.held``): not copied."""

    @classmethod
    def make(cls, plan: ProgramPlan, devices: dict[str, Device], module: Module,
             resident: Device | None, captured: Device | None,
             inputs: dict[str, Any], device_outputs: bool, lends: bool = False,
             held: dict[str, Any] | None = None,
             donated: frozenset[str] = frozenset()) -> "RunSchedule":
        schedule = cls(plan, devices, module, resident, captured, device_outputs)
        schedule.lends = lends
        schedule.held = held or {}
        schedule.donated = donated
        SchedulePlanner(schedule, inputs).plan()
        for fresh in schedule.fresh:
            if fresh.device is None:
                schedule.pool.expect(fresh.shape, fresh.dtype)
        schedule._bind(inputs)
        return schedule

    def run(self, inputs: dict[str, Any], report: Report) -> dict[str, Any]:
        if self.replay is not None:
            return self._replay(inputs, report)
        values = self._values(inputs)
        try:
            if self.resident is not None:
                stats = CopyStats()
                self._copy_in(values, inputs, stats)
                report.add_copies("<inputs>", stats, empty=True)
            self._launch_steps(values, report)
            return self._outputs(values, report)
        finally:
            if self.resident is not None:
                self._free_per_run(values)

    def _launch_steps(self, values: list[Any], report: Report) -> None:
        """Launch the steps in order, each waited for; on a resident device
        with ordered launches, waited for only where the host must see
        their work (pending_launches.py)."""
        records = report.records
        clock = time.perf_counter
        pending = PendingLaunches(records)
        deferred = self.resident is not None and self.resident.ordered_launches
        try:
            for step in self.steps:
                if step.launch is None:  # a constant: made with the schedule
                    records.append(NodeRecord(step.plan.task.label, step.label, 0.0, CopyStats()))
                    continue
                if pending and (step.zero or step.copies):
                    pending.settle()
                for slot in step.zero:
                    step.device.clear(values[slot])
                for to, source in step.copies:
                    if to in self.duplicates:
                        values[to] = self.resident.duplicate(values[source], *self.layouts[to])
                    else:
                        step.device.copy_buffer(values[to], values[source])
                changed = {port: values[slot] for port, slot in step.changing}
                began = clock()
                try:
                    event = step.launch(changed)
                    if deferred:
                        pending.add(step, event)
                        continue
                    step.device.wait(event)
                except HpvmError:
                    raise
                except Exception as error:  # a device or driver failing mid-run
                    raise launch_failure(step.plan, error) from error
                seconds = step.device.elapsed(event)
                if seconds is None:
                    seconds = clock() - began
                records.append(NodeRecord(step.plan.task.label, step.label, seconds, CopyStats()))
            pending.settle()
        except BaseException:
            pending.abandon()
            raise

    def _copy_in(self, values: list[Any], inputs: dict[str, Any], stats: CopyStats) -> None:
        """The run's input arrays into their buffers on the resident device
        (counted in ``stats``); a captured replay's staged inputs copied on
        the device into the buffers it reads."""
        for name, slot in self.inputs:
            value = inputs[name]
            if isinstance(value, np.ndarray):
                self.resident.copy_in(values[slot], value)
                stats.to_device += value.nbytes
            elif isinstance(value, StagedBuffer) and self.captured is not None \
                    and name not in self.held:
                self.resident.copy_buffer(values[slot], value.handle)

    def _copy_out(self, values: list[Any], stats: CopyStats) -> dict[str, Any]:
        """The outputs out of the resident device's buffers: copied to the
        host (counted in ``stats``), each buffer once, its other names get
        copies; or, with ``device_outputs``, handed over as the device's
        arrays (a buffer the schedule keeps, or handed over under another
        name, as a duplicate)."""
        outputs, seen = {}, {}
        device = self.resident
        self.lent = set()
        for name, slot, handed in self.outputs:
            if self.lends and slot in self.lendable and slot not in self.lent:
                array = device.lend(values[slot])
                if array is not None:
                    outputs[name] = array
                    self.lent.add(slot)
                    continue
            if self.device_outputs:
                handle = values[slot] if handed and self.captured is None else \
                    device.duplicate(values[slot], *self.layouts[slot])
                array = device.export(handle)
                if array is not None:
                    outputs[name] = array
                    if handle is values[slot]:
                        values[slot] = None  # the caller's now: not freed with the run
                    continue
                if handle is not values[slot]:
                    device.free(handle)
            if slot in seen:
                outputs[name] = np.array(seen[slot], copy=True)
                continue
            outputs[name] = seen[slot] = np.asarray(device.copy_out(values[slot]))
            stats.to_host += outputs[name].nbytes
        return outputs

    def _outputs(self, values: list[Any], report: Report) -> dict[str, Any]:
        """The run's outputs: host arrays made for it handed over; on a
        resident device, copied out of its buffers or left there."""
        if self.resident is None:
            return {name: values[slot] if handed else np.array(values[slot], copy=True)
                    for name, slot, handed in self.outputs}
        stats = CopyStats()
        outputs = self._copy_out(values, stats)
        report.records.append(NodeRecord("<outputs>", "host", 0.0, stats))
        report.bytes_copied += stats.total
        return outputs

    def _bind(self, inputs: dict[str, Any]) -> None:
        """Bind every launch to its buffers, and run the constant nodes
        (their values are kept for every run).  A resident schedule keeps
        the input arrays' buffers on the device; a captured one keeps every
        buffer and records its launches."""
        device = self.resident
        for name, slot in self.inputs:
            value = inputs[name]
            if device is not None and isinstance(value, np.ndarray):
                self.kept[slot] = device.allocate(value.shape, value.dtype)
                device.copy_in(self.kept[slot], value)
            elif self.captured is not None and name in self.held:
                self.kept[slot] = self.held[name]
            elif self.captured is not None and isinstance(value, StagedBuffer):
                self.kept[slot] = device.allocate(value.shape, value.dtype)
                device.copy_buffer(self.kept[slot], value.handle)
        if self.captured is not None:
            for fresh in self.fresh:
                self.kept[fresh.slot] = device.allocate(fresh.shape, fresh.dtype)
            self.lendable = {fresh.slot for fresh in self.fresh}
            values = list(self.kept)
        else:
            values = self._values(inputs)
        for step in self.steps:
            launch = step.device.bind(step.plan.task.ref, {p: values[s] for p, s in step.ports})
            if step.plan.constant:
                step.device.wait(launch({}))
            else:
                step.launch = launch
        if self.captured is not None:
            self.replay = self.captured.capture(self._launch_all)
            self.replay_label = f"{target_label(self.plan.tasks[0].target, device)}: " \
                                f"{len(self.steps)} nodes, one replay"
        elif device is not None:  # runs bind buffers of their own in these slots
            self._free_per_run(values)

    def busy(self) -> bool:
        """True while the caller holds an output this schedule lent."""
        return any(self.resident.lent(self.kept[slot]) for slot in self.lent)

    def _free_per_run(self, values: list[Any]) -> None:
        """Free the resident device's buffers made for one run."""
        for slot in [fresh.slot for fresh in self.fresh] + list(self.duplicates):
            if values[slot] is not None:
                self.resident.free(values[slot])

    def _values(self, inputs: dict[str, Any]) -> list[Any]:
        """Every slot's value for one run: the kept ones, this run's inputs,
        and the arrays made for it."""
        values = list(self.kept)
        for name, slot in self.inputs:
            if values[slot] is None:  # not a resident device's kept buffer
                value = inputs[name]
                values[slot] = value.handle if isinstance(value, StagedBuffer) else value
        for fresh in self.fresh:
            device = fresh.device
            values[fresh.slot] = self.pool.empty(fresh.shape, fresh.dtype) if device is None \
                else device.empty(fresh.shape, fresh.dtype) if fresh.whole \
                else device.allocate(fresh.shape, fresh.dtype)
        return values

    def _launch_all(self) -> None:
        for step in self.steps:
            if step.launch is not None:
                step.device.wait(step.launch({}))

    def _replay(self, inputs: dict[str, Any], report: Report) -> dict[str, np.ndarray]:
        """A captured run: inputs copied into the kept buffers, one replay,
        outputs copied out; one record for the whole graph."""
        stats = CopyStats()
        began = time.perf_counter()
        values = list(self.kept)
        try:
            self._copy_in(values, inputs, stats)
            self.replay()
            outputs = self._copy_out(values, stats)
        except HpvmError:
            raise
        except Exception as error:  # a device or driver failing mid-run
            raise ExecutionError(Diagnostic(
                Location(graph=self.plan.tasks[0].task.graph),
                f"target '{self.plan.tasks[0].target}' failed while replaying the program's "
                f"captured launches: {type(error).__name__}: {error}",
                "turn capture off in the target's options, or report it to the plugin's "
                "authors")) from error
        report.records.append(NodeRecord("<captured graph>", self.replay_label,
                                         time.perf_counter() - began, stats))
        report.bytes_copied += stats.total
        return outputs
