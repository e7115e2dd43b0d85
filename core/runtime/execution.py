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

from ..errors import Location
from ..ir.graph import Module
from ..ir.shapes import bind_symbols, output_shape
from ..target import Device
from .flatten import FlatProgram, LeafTask, Source
from .memory import CopyStats, MemoryTracker, Value
from .scheduler import DagScheduler


@dataclass
class NodeRecord:
    """What one node did in one run: where, how long, what it copied."""

    node: str
    target: str
    seconds: float
    copies: CopyStats
    frame: int = 0


@dataclass
class Report:
    records: list[NodeRecord] = field(default_factory=list)
    bytes_copied: int = 0

    def format(self) -> str:
        width = max([len(r.node) for r in self.records] + [4])
        lines = [f"{'node':<{width}}  {'target':<12}  {'ms':>9}  {'copied B':>10}"]
        for r in self.records:
            lines.append(f"{r.node:<{width}}  {r.target:<12}  {r.seconds * 1e3:9.3f}  {r.copies.total:10d}")
        lines.append(f"total bytes copied: {self.bytes_copied}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def consumer_counts(program: FlatProgram) -> dict[Source, int]:
    """How many tasks (and root outputs) read each value."""
    counts: dict[Source, int] = {}
    for task in program.tasks:
        for source in task.inputs.values():
            counts[source] = counts.get(source, 0) + 1
    for source in program.outputs.values():
        counts[source] = counts.get(source, 0) + 1
    return counts


class Frame:
    """One execution of the program; tasks are scheduled as jobs
    ``(frame_id, task_index)`` and wait for ``after`` jobs too (the same
    task of the previous frame, when streaming)."""

    def __init__(self, frame_id: int, module: Module, program: FlatProgram,
                 placement: dict[str, str], devices: dict[str, Device],
                 tracker: MemoryTracker, report: Report):
        self.id = frame_id
        self.module = module
        self.program = program
        self.placement = placement
        self.devices = devices
        self.tracker = tracker
        self.report = report
        self.counts = consumer_counts(program)
        self.values: dict[Source, Any] = {}

    def start(self, scheduler: DagScheduler, inputs: dict[str, Any], pinned: set[str],
              previous: "Frame | None" = None) -> Any:
        """Submit every task; returns the future of the final job."""
        for name, value in inputs.items():
            source = Source(None, name)
            consumers = self.counts.get(source, 0)
            if isinstance(value, Value):
                self.values[source] = value
            elif isinstance(value, np.ndarray):
                self.values[source] = self.tracker.from_host(value, consumers, pinned=name in pinned)
            else:
                self.values[source] = value
        for task in self.program.tasks:
            deps = [(self.id, d) for d in sorted(task.deps)]
            if previous is not None:
                deps.append((previous.id, task.index))
            scheduler.add((self.id, task.index), deps, lambda t=task: self._run(t))
        final = [(self.id, t.index) for t in self.program.tasks]
        return scheduler.add((self.id, "outputs"), final, self._collect)

    def _run(self, task: LeafTask) -> None:
        target = self.placement[str(task.ref)]
        device = self.devices[target]
        stats = CopyStats()
        params = self.module.node_params(task.node)
        where = Location(graph=task.graph, node=task.node.name)
        args: dict[str, Any] = {}
        for p in params:
            if p.name not in task.inputs:
                continue
            value = self.values[task.inputs[p.name]]
            if not p.is_buffer:
                args[p.name] = value
            elif p.direction == "in":
                args[p.name] = self.tracker.acquire(value, target, stats)
            else:
                args[p.name] = self.tracker.acquire_for_update(value, target, stats)
        shapes = {p.name: self.values[task.inputs[p.name]] for p in params if p.name in task.inputs}
        symbols = bind_symbols(params, shapes, where)
        out_shapes = {}
        for p in params:
            if p.direction == "out":
                out_shapes[p.name] = output_shape(p, symbols, where)
                args[p.name] = device.allocate(out_shapes[p.name], p.type.element.numpy_dtype)
        began = time.perf_counter()
        device.wait(device.launch(task.ref, args))
        seconds = time.perf_counter() - began
        for p in params:
            if p.writes:
                shape = out_shapes.get(p.name) or self.values[task.inputs[p.name]].shape
                source = Source(task.index, p.name)
                value = self.tracker.produced(target, args[p.name], shape,
                                              p.type.element.numpy_dtype, self.counts.get(source, 0))
                if value.consumers == 0:
                    self.tracker.discard(value)  # an output nobody reads
                self.values[source] = value
        for p in params:
            if p.is_buffer and p.name in task.inputs:
                self.tracker.release(self.values[task.inputs[p.name]])
        self.report.records.append(NodeRecord(task.label, target, seconds, stats, self.id))

    def _collect(self) -> dict[str, np.ndarray]:
        outputs = {}
        stats = CopyStats()
        for name, source in self.program.outputs.items():
            value = self.values[source]
            array = self.tracker.to_host(value, stats)
            # The last reader of a value the run made owns it: no copy.
            handed_over = not value.pinned and value.consumers == 1
            outputs[name] = array if handed_over else np.array(array, copy=True)
            self.tracker.release(value)
        if stats.total:
            self.report.records.append(NodeRecord("<outputs>", "host", 0.0, stats, self.id))
        self.report.bytes_copied = self.tracker.bytes_copied
        return outputs
