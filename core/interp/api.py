"""The reference interpreter's public entry points.

- ``run_module(module, inputs)``: run the root graph once; returns its
  outputs (out and inout parameters) by name.
- ``Interpreter(module)``: ``.run(**inputs)``; and for streaming root graphs
  ``.start(**fixed_inputs)``, ``.push(**frame)`` (runs the graph on that
  frame), ``.pop()`` (outputs in push order), ``.close()``.
- ``run_kernel(module, function_name, args, replication)``: run one kernel
  function over a replication; returns every buffer after the run.

Inputs are checked before anything runs (see hpvm.interp.inputs).
"""
from __future__ import annotations

from collections import deque
from typing import Any, Mapping

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.graph import Module
from hpvm.ir.shapes import bind_symbols, output_shape

from .graph_exec import run_graph
from .inputs import check_inputs, convert_argument
from .kernel_launch import launch_kernel


def run_module(module: Module, inputs: Mapping[str, Any], observe=None) -> dict[str, np.ndarray]:
    """Run ``module``'s root graph on ``inputs``; its outputs by name.
    ``observe(graph, node, port, value)`` sees every value a node makes."""
    if observe is None:
        return Interpreter(module).run(**inputs)
    graph = _root_graph(module)
    checked = check_inputs(graph.params, inputs, Location(graph=graph.name))
    return _as_outputs(run_graph(module, graph, checked, observe))


class Interpreter:
    """Runs one module, once (``run``) or as a pipeline over frames."""

    def __init__(self, module: Module):
        self.module = module
        self.graph = _root_graph(module)
        self._where = Location(graph=self.graph.name)
        self._fixed: dict[str, Any] | None = None
        self._results: deque[dict[str, np.ndarray]] = deque()
        self._closed = False

    def run(self, **inputs) -> dict[str, np.ndarray]:
        """Run the root graph once on all of its inputs."""
        checked = check_inputs(self.graph.params, inputs, self._where)
        return _as_outputs(run_graph(self.module, self.graph, checked))

    @property
    def streaming_inputs(self) -> tuple[str, ...]:
        """The inputs that change with every pushed frame."""
        return tuple(dict.fromkeys(b.param for b in self.graph.bind_ins if b.streaming))

    def start(self, **fixed_inputs) -> None:
        """Begin a pipeline run: ``fixed_inputs`` are the non-streaming
        inputs, kept for every frame."""
        self._check_open()
        streaming = self.streaming_inputs
        for name in fixed_inputs:
            if name in streaming:
                raise ExecutionError(Diagnostic(
                    self._where, f"'{name}' is a streaming input",
                    f"pass '{name}' to push() with every frame, not to start()"))
        check_inputs(self.graph.params, fixed_inputs, self._where, optional=streaming)
        self._fixed = dict(fixed_inputs)

    def push(self, **frame) -> None:
        """Run the pipeline on one frame of streaming inputs; its outputs
        are queued for ``pop``."""
        self._check_open()
        if self._fixed is None:
            raise ExecutionError(Diagnostic(self._where, "push() before start()",
                                            "call start(**fixed_inputs) first"))
        for name in frame:
            if name in self._fixed or name not in self.streaming_inputs:
                raise ExecutionError(Diagnostic(
                    self._where, f"'{name}' is not a streaming input",
                    f"push only {', '.join(self.streaming_inputs) or '(none)'}"))
        self._results.append(self.run(**self._fixed, **frame))

    def pop(self) -> dict[str, np.ndarray]:
        """The outputs of the oldest pushed frame not yet popped."""
        if not self._results:
            raise ExecutionError(Diagnostic(self._where, "pop() with no pushed frame left",
                                            "push a frame before popping its result"))
        return self._results.popleft()

    def close(self) -> None:
        """End the pipeline; frames not popped are dropped."""
        self._closed = True
        self._fixed = None
        self._results.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise ExecutionError(Diagnostic(self._where, "the pipeline is closed",
                                            "make a new Interpreter to run again"))


def run_kernel(module: Module, function_name: str, args: Mapping[str, Any],
               replication: tuple[int, ...],
               group: tuple[int, ...] | None = None) -> dict[str, np.ndarray]:
    """Run kernel ``function_name`` with ``args`` over ``replication``;
    returns every buffer parameter after the run (out buffers left out of
    ``args`` are allocated zero-filled from the size symbols).  The arrays
    passed in are not modified.  ``group``: work-group sizes for local
    arrays (default: the whole replication is one group)."""
    try:
        function = module.function(function_name)
    except KeyError:
        raise ExecutionError(Diagnostic(
            Location(function=function_name), "no such function",
            f"use one of {', '.join(module.functions) or '(none)'}")) from None
    where = Location(function=function.name)
    outs = {p.name for p in function.params if p.direction == "out"}
    given_outs = {p.name: convert_argument(p, args[p.name], where)
                  for p in function.params if p.name in outs and p.name in args}
    reading = {n: v for n, v in args.items() if n not in given_outs}
    checked = check_inputs(function.params, reading, where)
    symbols = bind_symbols(function.params, checked, where)
    buffers: dict[str, Any] = {}
    for param in function.params:
        if param.is_buffer and param.direction != "in":
            if param.name in checked:
                buffers[param.name] = np.array(checked[param.name], order="C", copy=True)
            elif param.name in given_outs:
                buffers[param.name] = np.array(given_outs[param.name], order="C", copy=True)
            else:
                buffers[param.name] = np.zeros(output_shape(param, symbols, where),
                                               dtype=param.type.element.numpy_dtype)
    launch_kernel(module, function, {**checked, **buffers}, tuple(replication), group,
                  where)
    return {p.name: buffers.get(p.name, checked.get(p.name))
            for p in function.params if p.is_buffer}


def _root_graph(module: Module):
    try:
        return module.graph(module.root)
    except KeyError:
        raise ExecutionError(Diagnostic(
            Location(), f"module '{module.name}' has no root graph '@{module.root}'",
            "set Module.root to one of its graphs")) from None


def _as_outputs(outputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {name: np.array(value, copy=True) for name, value in outputs.items()}
