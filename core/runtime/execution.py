"""Running a flattened program on devices: one frame of work.

A :class:`Frame` runs every leaf task of a :class:`FlatProgram` once, on
the device its placement names, through the shared memory tracker and
scheduler.  Plain runs use one frame; streaming runs one per ``push``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import Diagnostic, ExecutionError, HpvmError
from ..ir.parameter import Parameter
from ..ir.shapes import bind_symbols, check_allocation, output_shape
from ..target import Device
from .device_arrays import DEVICE_OUTPUTS, HOST_OUTPUTS
from .flatten import Source
from .memory import CopyStats, MemoryTracker, Value
from .scheduler import DagScheduler
from .task_plan import SCALAR, READ, ProgramPlan, TaskPlan, consumer_counts  # noqa: F401


@dataclass
class NodeRecord:
    """What one node did in one run: where, how long, what it copied."""

    node: str
    target: str
    seconds: float
    copies: CopyStats
    frame: int = 0


COPY_RECORDS = frozenset({"<inputs>", "<outputs>"})
"""Names of the records of a run's copies in and out (not nodes)."""


@dataclass
class Report:
    records: list[NodeRecord] = field(default_factory=list)
    bytes_copied: int = 0

    @property
    def node_records(self) -> list[NodeRecord]:
        """The records of the program's nodes, without those of the copies
        in and out."""
        return [r for r in self.records if r.node not in COPY_RECORDS]

    @property
    def node_seconds(self) -> float:
        """The nodes' own times added up (the copies in and out left out)."""
        return sum(r.seconds for r in self.node_records)

    def add_copies(self, name: str, stats: CopyStats, frame: int = 0,
                   empty: bool = False) -> None:
        """Count ``stats`` in the record ``name`` of ``frame`` (a run's
        copies in or out: COPY_RECORDS), made if there is none yet (and
        something was copied, or ``empty`` asks for it all the same)."""
        if not (stats.total or empty):
            return
        for record in self.records:
            if record.node == name and record.frame == frame:
                record.copies.to_device += stats.to_device
                record.copies.to_host += stats.to_host
                break
        else:
            self.records.append(NodeRecord(name, "host", 0.0, stats, frame))
        self.bytes_copied += stats.total

    def format(self) -> str:
        width = max([len(r.node) for r in self.records] + [4])
        tw = max([len(r.target) for r in self.records] + [12])
        lines = [f"{'node':<{width}}  {'target':<{tw}}  {'ms':>9}  {'copied B':>10}"]
        for r in self.records:
            lines.append(f"{r.node:<{width}}  {r.target:<{tw}}  {r.seconds * 1e3:9.3f}  {r.copies.total:10d}")
        lines.append(f"total bytes copied: {self.bytes_copied}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        runs = len(self.node_records)
        return (f"<Report: {runs} node run{'' if runs == 1 else 's'}, "
                f"{self.node_seconds * 1e3:.3f} ms in nodes, {self.bytes_copied} bytes copied>")


class Frame:
    """One execution of the program; tasks are scheduled as jobs
    ``(frame_id, task_index)`` and wait for ``after`` jobs too (the same
    task of the previous frame, when streaming)."""

    def __init__(self, frame_id: int, plan: ProgramPlan, devices: dict[str, Device],
                 tracker: MemoryTracker, report: Report, serial: bool = False):
        self.id = frame_id
        self.serial = serial
        """No task parallelism: every task runs in the thread that makes it
        ready, one at a time."""
        self.plan = plan
        self.devices = devices
        self.tracker = tracker
        self.report = report
        self.counts = plan.counts
        self.values: dict[Source, Any] = {}
        self.outputs_place = HOST_OUTPUTS

    def start(self, scheduler: DagScheduler, inputs: dict[str, Any], pinned: set[str],
              previous: "Frame | None" = None, run_here: bool = False,
              outputs: str = HOST_OUTPUTS) -> Any:
        """Submit every task; returns the future of the final job.  With
        ``run_here`` the calling thread runs one of the first ready tasks
        (and the chain after it) before returning; the others go to the
        scheduler's threads.  ``outputs``: where the outputs go
        (device_arrays.OUTPUT_PLACES)."""
        self.outputs_place = outputs
        for name, value in inputs.items():
            source = Source(None, name)
            consumers = self.counts.get(source, 0)
            if isinstance(value, Value):
                self.values[source] = value
            elif isinstance(value, np.ndarray):
                self.values[source] = self.tracker.from_host(value, consumers, pinned=name in pinned)
            else:
                self.values[source] = value
        jobs = []
        for plan in self.plan.tasks:
            task = plan.task
            deps = [(self.id, d) for d in sorted(task.deps)]
            if previous is not None:
                deps.append((previous.id, task.index))
            job = (self.id, task.index)
            inline = plan.constant or self.devices[plan.target].async_launch or self.serial
            scheduler.add(job, deps, lambda p=plan: self._run(p), hold=run_here and not inline,
                          inline=inline)
            jobs.append(job)
        final = [(self.id, p.task.index) for p in self.plan.tasks]
        future = scheduler.add((self.id, "outputs"), final, self._collect)
        held = [job for job in jobs if run_here and scheduler.is_held(job)]
        for job in held[1:]:
            scheduler.release(job)
        if held:
            scheduler.run_here(held[0])
        return future

    def _run(self, plan: TaskPlan) -> None:
        target = plan.target
        device = self.devices[target]
        tracker = self.tracker
        values = self.values
        stats = CopyStats()
        args: dict[str, Any] = {}
        shapes: dict[str, Any] = {}
        for name, source, role in plan.arguments:
            value = values[source]
            shapes[name] = value
            if role == SCALAR:
                args[name] = value
            elif role == READ:
                args[name] = tracker.acquire(value, target, stats)
            else:
                args[name] = tracker.acquire_for_update(value, target, stats)
        symbols = bind_symbols(plan.bound_params, shapes, plan.where)
        out_shapes = {}
        for output in plan.outputs:
            if output.allocated:
                shape = out_shapes[output.param.name] = output_shape_of(output.param, symbols, plan.where)
                check_allocation(shape, output.dtype.itemsize, plan.where,
                                 f"output '{output.param.name}'")
                args[output.param.name] = device.allocate(shape, output.dtype)
        began = time.perf_counter()
        try:
            event = device.launch(plan.task.ref, args)
            device.wait(event)
        except HpvmError:
            raise
        except Exception as error:  # a device or driver failing mid-run
            raise launch_failure(plan, error) from error
        seconds = time.perf_counter() - began
        modelled = device.elapsed(event)
        if modelled is not None:
            seconds = modelled
        for output in plan.outputs:
            name = output.param.name
            shape = out_shapes[name] if name in out_shapes else values[plan.task.inputs[name]].shape
            value = tracker.produced(target, args[name], shape, output.dtype, output.consumers)
            if value.consumers == 0:
                tracker.discard(value)  # an output nobody reads
            values[output.source] = value
        for source in plan.buffer_sources:
            tracker.release(values[source])
        self.report.records.append(NodeRecord(plan.task.label, target_label(target, device),
                                              seconds, stats, self.id))

    def _collect(self) -> dict[str, np.ndarray]:
        outputs = {}
        stats = CopyStats()
        for name, source in self.plan.outputs.items():
            value = self.values[source]
            # The last reader of a value the run made owns it: no copy.
            handed_over = not value.pinned and value.consumers == 1
            array = self.tracker.export(value, handed_over) \
                if self.outputs_place == DEVICE_OUTPUTS else None
            if array is None:
                array = self.tracker.to_host(value, stats)
                array = array if handed_over else np.array(array, copy=True)
            outputs[name] = array
            self.tracker.release(value)
        if stats.total:
            self.report.records.append(NodeRecord("<outputs>", "host", 0.0, stats, self.id))
        self.report.bytes_copied = self.tracker.bytes_copied
        return outputs


def launch_failure(plan: TaskPlan, error: Exception) -> ExecutionError:
    """The error a run reports when a device or driver fails mid-launch."""
    target = plan.target
    return ExecutionError(Diagnostic(
        plan.where, f"target '{target}' failed while running it: {type(error).__name__}: {error}",
        f"run this node on another target, or report it to the '{target}' plugin's authors"))


def target_label(target: str, device: Device) -> str:
    """The target as run reports name it ("fpga_aoc (emulated)")."""
    return f"{target} ({device.timing_label})" if device.timing_label else target


def timing_label_of(label: str, target: str) -> str:
    """What a run report's ``label`` (target_label's) says of ``target``'s
    times ("emulated"), or "" when they are the device's own."""
    prefix = f"{target} ("
    return label[len(prefix):-1] if label.startswith(prefix) and label.endswith(")") else ""


def output_shape_of(param: Parameter, symbols: dict[str, int], where) -> tuple[int, ...]:
    """output_shape without its checks when every size is known (the common
    case); the checked version reports what is missing."""
    shape = param.type.shape
    try:
        return tuple(symbols[d] if isinstance(d, str) else d for d in shape)
    except (KeyError, TypeError):
        return output_shape(param, symbols, where)
