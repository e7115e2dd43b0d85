"""Planning a static schedule (static_run.py): for one input signature,
where every value of a run lives (slots), and each node's launch step.

A slot holds one of: a run's input, an arena buffer kept from run to run
(a dead intermediate's buffer is taken by a later value of the same
layout), a constant (made once), or a value made in each run (the
program's outputs, large values their node does not write whole, and on a
device of its own memory every value not written whole, and private copies
of values updated in place).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

from ..ir.graph import Module
from ..ir.shapes import bind_symbols, check_allocation, replication_sizes
from ..target import Device
from .execution import output_shape_of, target_label
from .flatten import Source
from .task_plan import SCALAR, UPDATE, ProgramPlan, TaskPlan
from .whole_writes import whole_outputs


@dataclass(frozen=True)
class StagedBuffer:
    """An input staged on the resident device (``Executable.stage``): its
    buffer there, used as it is (never copied in, never updated)."""

    handle: Any
    shape: tuple[int, ...]
    dtype: np.dtype

PER_RUN_BYTES = 4 << 20
"""Intermediates this large that their node does not write whole are made
in every run instead of kept in the arena, unless their device clears on
every core (``parallel_clear``): the OS hands out zeroed pages, first
touched by the cores that run the producing kernel, where an arena buffer
is zero-filled by one thread (camera at 1536x2048 on 16 cores: 26.7 ms
with the arena, 17.6 before).  Those written whole stay in the arena: no
clearing, and no page faults in every run (whole_writes.py)."""


class Fresh(NamedTuple):
    """An array made in each run: in the host's output pool (``device``
    None: written whole by its node, so made uncleared), or on ``device``,
    uncleared where ``whole``."""

    slot: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device: Device | None
    whole: bool = False


@dataclass
class Step:
    """One node's launch in the schedule."""

    plan: TaskPlan
    device: Device
    label: str
    launch: Callable[[dict[str, Any]], Any] | None = None
    """The bound launch; None for a constant node (run once, when bound)."""
    zero: list[int] = field(default_factory=list)
    """Slots of arena outputs, zero-filled before each launch."""
    copies: list[tuple[int, int]] = field(default_factory=list)
    """(to, from) slots: private copies of values the node updates in place."""
    changing: list[tuple[str, int]] = field(default_factory=list)
    """Ports whose buffer or scalar is new in every run (inputs, except a
    resident device's kept input buffers; values made in each run)."""
    ports: list[tuple[str, int]] = field(default_factory=list)
    """Every port's slot."""


class Schedule:
    """One planned run: the slots of every value, the arena, the steps
    (static_run's schedules run it).

    Slots are indices into the list of a run's values: the run's inputs,
    arena buffers (kept between runs), constants (made once) and fresh
    outputs (made per run, handed to the caller)."""

    def __init__(self, plan: ProgramPlan, devices: dict[str, Device], module: Module,
                 resident: Device | None, captured: Device | None,
                 device_outputs: bool = False):
        self.plan = plan
        self.devices = devices
        self.module = module
        self.resident = resident
        """The device holding every value of a run, or None (host memory)."""
        self.captured = captured
        """The device running the whole plan as one captured replay, or None."""
        self.device_outputs = device_outputs
        """The outputs stay on the resident device, handed to the caller as
        its arrays: each is made in the run (uncleared where its node
        writes it whole), not kept, unless the launches are captured."""
        self.kept: list[Any] = []
        """Each slot's value kept between runs (arena buffers, constants);
        None for the slots filled per run."""
        self.layouts: list[tuple[tuple[int, ...], np.dtype] | None] = []
        """Each slot's (shape, dtype); None for a scalar input."""
        self.inputs: list[tuple[str, int]] = []
        self.fresh: list[Fresh] = []
        """The arrays made in each run."""
        self.duplicates: set[int] = set()
        """Slots of the resident device's private copies of values updated in
        place, made in each run (``Device.duplicate``)."""
        self.donated: frozenset[str] = frozenset()
        """Inputs (host arrays) a node may update in place, its output then
        the caller's array (donation.py)."""
        self.steps: list[Step] = []
        self.outputs: list[tuple[str, int, bool]] = []
        """(name, slot, handed over): an output made in the run gives its
        first name the array itself; every other output is a copy."""


class SchedulePlanner:
    """Works out a schedule's slots for one input signature."""

    INPUT, ARENA, FRESH, CONSTANT = "input", "arena", "fresh", "constant"

    def __init__(self, schedule: Schedule, inputs: dict[str, Any]):
        self.schedule = schedule
        self.inputs = inputs
        self.kinds: list[str] = []
        self.layouts = schedule.layouts
        self.slot_of: dict[Source, int] = {}
        self.free: dict[tuple, list[int]] = {}
        self.staged: set[int] = set()
        """Input slots of staged buffers: new in every run, never owned."""
        self.donated: set[int] = set()
        """Input slots of donated arrays: owned, as the run's own values are."""
        plan = schedule.plan
        self.outputs = set(plan.outputs.values())
        self.last_reader: dict[Source, int] = {}
        for index, task in enumerate(plan.tasks):
            for _, source, _ in task.arguments:
                self.last_reader[source] = index

    def plan(self) -> None:
        schedule = self.schedule
        for name, value in self.inputs.items():
            shaped = isinstance(value, (np.ndarray, StagedBuffer))
            slot = self._new_slot(self.INPUT, (value.shape, value.dtype) if shaped else None)
            if isinstance(value, StagedBuffer):
                self.staged.add(slot)
            elif name in schedule.donated:
                self.donated.add(slot)
            schedule.inputs.append((name, slot))
            self.slot_of[Source(None, name)] = slot
        shapes = {Source(None, name): value.shape for name, value in self.inputs.items()
                  if isinstance(value, (np.ndarray, StagedBuffer))}
        for index, task in enumerate(schedule.plan.tasks):
            schedule.steps.append(self._step(index, task, shapes))
        seen: set[int] = set()
        for name, source in schedule.plan.outputs.items():
            slot = self.slot_of[source]
            handed = (self.kinds[slot] == self.FRESH or slot in self.donated) \
                and slot not in seen
            seen.add(slot)
            schedule.outputs.append((name, slot, handed))

    def _step(self, index: int, task: TaskPlan, shapes: dict) -> Step:
        device = self.schedule.devices[task.target]
        step = Step(task, device, target_label(task.target, device))
        values = {}
        for port, source, role in task.arguments:
            values[port] = self.inputs[source.port] if source.task is None and role == SCALAR \
                else Shaped(shapes[source])
        symbols = bind_symbols(task.bound_params, values, task.where)
        outputs = [o for o in task.outputs if o.allocated]
        out_shapes = {o.param.name: output_shape_of(o.param, symbols, task.where)
                      for o in outputs}
        whole = self._written_whole(task, symbols, out_shapes)
        for port, source, role in task.arguments:
            slot = self.slot_of[source]
            if role == UPDATE:
                slot = self._updated(index, task, port, source, step)
                self.slot_of[Source(task.task.index, port)] = slot
                shapes[Source(task.task.index, port)] = shapes[source]
            step.ports.append((port, slot))
        for output in outputs:
            shape = out_shapes[output.param.name]
            check_allocation(shape, output.dtype.itemsize, task.where,
                             f"output '{output.param.name}'")
            shapes[output.source] = shape
            slot = self._output_slot(task, output.source, shape, output.dtype, step,
                                     output.param.name in whole)
            self.slot_of[output.source] = slot
            step.ports.append((output.param.name, slot))
        if self.schedule.captured is None:
            kept_inputs = self.schedule.resident is not None
            step.changing = [(port, slot) for port, slot in step.ports
                             if self.kinds[slot] == self.FRESH or slot in self.staged
                             or (self.kinds[slot] == self.INPUT
                                 and not (kept_inputs and self.layouts[slot]))]
        self._release_dead(index, task)
        return step

    def _updated(self, index: int, task: TaskPlan, port: str, source: Source,
                 step: Step) -> int:
        """The slot a node updates in place: the value's own buffer when no
        one reads it afterwards (ownership moves), else a private copy."""
        slot = self.slot_of[source]
        reads_here = sum(1 for _, s, _ in task.arguments if s == source)
        # A resident device's input buffer is the run's own copy of the input.
        owned = self.kinds[slot] in (self.ARENA, self.FRESH) or slot in self.donated or \
            self.kinds[slot] == self.INPUT and self._resident_run and slot not in self.staged
        if owned and self.last_reader[source] == index and source not in self.outputs \
                and reads_here == 1:
            self.last_reader[source] = -1  # its buffer lives on as the new value
            return slot
        shape, dtype = self.layouts[slot]
        if self._resident_run:
            copy = self._new_slot(self.FRESH, (shape, dtype))
            self.schedule.duplicates.add(copy)
        else:
            copy = self._buffer(Source(task.task.index, port), shape, dtype, step.device,
                                copy=True)
        step.copies.append((copy, slot))
        return copy

    @property
    def _resident_run(self) -> bool:
        """Values live on a resident device that launches node by node."""
        return self.schedule.resident is not None and self.schedule.captured is None

    def _written_whole(self, task: TaskPlan, symbols: dict, shapes: dict) -> frozenset[str]:
        """The node's outputs (``shapes``: port -> this signature's shape)
        it writes whole in every run."""
        node = task.task.node
        sizes = replication_sizes(node.replication, symbols, task.where)
        return whole_outputs(self.schedule.module, node, sizes, shapes)

    def _output_slot(self, task: TaskPlan, source: Source, shape, dtype, step: Step,
                     whole: bool) -> int:
        if task.constant:
            slot = self._new_slot(self.CONSTANT, (shape, dtype))
            self.schedule.kept[slot] = step.device.allocate(shape, dtype)
            return slot
        slot = self._buffer(source, shape, dtype, step.device, whole)
        if self.kinds[slot] == self.ARENA and self.schedule.captured is None and not whole:
            step.zero.append(slot)
        return slot

    def _buffer(self, source: Source, shape, dtype, device: Device, whole: bool = False,
                copy: bool = False) -> int:
        """A slot for ``source``: made in each run for a program output, a
        large value its node does not write whole (the OS clears fresh
        pages as the kernel touches them) unless the device clears on
        every core (``device.parallel_clear``: the run clears it in the
        arena), and a large private ``copy`` of a value updated in place
        (made uncleared: the copy writes it whole; updated on, it is often
        the program's output, then handed out without a copy); else a free
        arena buffer of that layout, or a new one.  On a resident device
        that does not capture, every value written whole is kept (outputs
        too: they are copied out), every other value made, cleared, in each
        run."""
        layout = (tuple(shape), np.dtype(dtype))
        large = math.prod(layout[0]) * layout[1].itemsize >= PER_RUN_BYTES
        if self._resident_run:
            per_run = not whole or (self.schedule.device_outputs and source in self.outputs)
        else:
            per_run = source in self.outputs or (
                large and not whole and (copy or not device.parallel_clear))
        if per_run:
            slot = self._new_slot(self.FRESH, layout)
            made_uncleared = (whole or copy) and device.host_memory
            self.schedule.fresh.append(Fresh(slot, layout[0], layout[1],
                                             None if made_uncleared else device, whole))
            return slot
        free = self.free.get(layout)
        if free:
            return free.pop()
        slot = self._new_slot(self.ARENA, layout)
        self.schedule.kept[slot] = device.allocate(*layout)
        return slot

    def _release_dead(self, index: int, task: TaskPlan) -> None:
        """Arena buffers whose value no later node reads go back to the
        free lists (an output no one reads dies at once); the program's
        outputs live to the end (a resident device copies them out then)."""
        dead = [s for _, s, _ in task.arguments
                if self.last_reader.get(s) == index and s not in self.outputs]
        dead += [o.source for o in task.outputs
                 if o.source not in self.last_reader and o.source not in self.outputs]
        for source in dict.fromkeys(dead):
            slot = self.slot_of.get(source)
            if slot is not None and self.kinds[slot] == self.ARENA:
                self.free.setdefault(self.layouts[slot], []).append(slot)

    def _new_slot(self, kind: str, layout) -> int:
        self.kinds.append(kind)
        self.layouts.append(layout)
        self.schedule.kept.append(None)
        return len(self.kinds) - 1


@dataclass(frozen=True)
class Shaped:
    """A value's shape, for binding shape symbols before any buffer exists."""

    shape: tuple[int, ...]
