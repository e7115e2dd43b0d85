"""What running each leaf task needs that does not change between runs,
worked out once per Executable: its ports sorted by role, where it runs,
the dtypes of its outputs and how many readers each output has.

Frames (execution.py) read these plans on every run instead of walking the
node's parameters again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import Location
from ..ir.graph import ConstantBody, Module
from ..ir.parameter import Parameter
from .flatten import FlatProgram, LeafTask, Source

SCALAR, READ, UPDATE = "scalar", "read", "update"


@dataclass(frozen=True)
class OutputPort:
    """A port the task writes: its value's source, dtype and readers."""

    param: Parameter
    source: Source
    dtype: np.dtype
    consumers: int
    allocated: bool
    """True for an ``out`` port: the runtime allocates it before the launch."""


@dataclass(frozen=True)
class TaskPlan:
    task: LeafTask
    target: str
    where: Location
    bound_params: tuple[Parameter, ...]
    """The parameters that receive a value, in declaration order (the scope
    that binds the shape symbols)."""
    arguments: tuple[tuple[str, Source, str], ...]
    """(port, source, SCALAR / READ / UPDATE) per incoming value."""
    outputs: tuple[OutputPort, ...]
    buffer_sources: tuple[Source, ...]
    """The incoming buffers, released after the launch."""

    @property
    def constant(self) -> bool:
        """A constant node: its launch only copies data."""
        return isinstance(self.task.node.body, ConstantBody)


@dataclass(frozen=True)
class ProgramPlan:
    tasks: tuple[TaskPlan, ...]
    counts: dict[Source, int]
    """How many tasks (and root outputs) read each value."""
    outputs: dict[str, Source]


def consumer_counts(program: FlatProgram) -> dict[Source, int]:
    """How many tasks (and root outputs) read each value."""
    counts: dict[Source, int] = {}
    for task in program.tasks:
        for source in task.inputs.values():
            counts[source] = counts.get(source, 0) + 1
    for source in program.outputs.values():
        counts[source] = counts.get(source, 0) + 1
    return counts


def plan_program(module: Module, program: FlatProgram, placement: dict[str, str]) -> ProgramPlan:
    """The plan of every task of ``program`` placed by ``placement``."""
    counts = consumer_counts(program)
    tasks = tuple(_plan_task(module, task, placement[str(task.ref)], counts)
                  for task in program.tasks)
    return ProgramPlan(tasks, counts, dict(program.outputs))


def _plan_task(module: Module, task: LeafTask, target: str, counts: dict[Source, int]) -> TaskPlan:
    params = module.node_params(task.node)
    arguments = []
    for p in params:
        if p.name in task.inputs:
            role = SCALAR if not p.is_buffer else READ if p.direction == "in" else UPDATE
            arguments.append((p.name, task.inputs[p.name], role))
    outputs = []
    for p in params:
        if p.writes:
            source = Source(task.index, p.name)
            outputs.append(OutputPort(p, source, p.type.element.numpy_dtype,
                                      counts.get(source, 0), p.direction == "out"))
    return TaskPlan(
        task=task, target=target,
        where=Location(graph=task.graph, node=task.node.name),
        bound_params=tuple(p for p in params if p.name in task.inputs),
        arguments=tuple(arguments), outputs=tuple(outputs),
        buffer_sources=tuple(task.inputs[p.name] for p in params
                             if p.is_buffer and p.name in task.inputs))
