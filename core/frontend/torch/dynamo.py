"""``torch.compile(model, backend="hpvm")``: the graphs Dynamo captures,
run by hpvm where it has the operators and by PyTorch where it has not.

Dynamo hands the backend an FX graph of torch-level calls with the
model's parameters as inputs.  The backend exports it to ATen operators
(``torch.export``), splits that graph into the largest pieces hpvm can
translate (torch.fx's capability-based partitioner), compiles each piece
for the chosen targets, and returns the graph with each piece replaced by
a call of its Executable; what is left runs in PyTorch.  Parameters are
weights: their values when the graph is compiled are constants of the
hpvm program (inference; recompile after changing them).

    torch.compile(model, backend="hpvm",
                  options={"targets": ["cpu"], "precision": "fp16", ...})

``options``: ``targets`` (default: ``["cpu"]``), and any compile options
hpvm.runtime.compile takes (per target, or for every target that has them).

Each graph's GraphReport (explain.py: how many operators hpvm runs, which
stayed with PyTorch and why) is logged once, with a warning when PyTorch
runs all of them.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...errors import HpvmError
from ...passes import TENSOR_PIPELINE, run_pipeline
from ...runtime import compile
from .aten import convert_graph, op_name, supports
from .explain import GraphReport

DEFAULT_TARGETS = ("cpu",)


def compile_graph(graph_module: torch.fx.GraphModule, example_inputs: list,
                  options: dict | None = None, reports: list | None = None,
                  **_ignored) -> Any:
    """The backend: a callable of the graph's inputs giving its outputs;
    the graph's GraphReport is told (logged) and added to ``reports``."""
    options = dict(options or {})
    targets = list(options.pop("targets", DEFAULT_TARGETS))
    weights = {index for index, value in enumerate(example_inputs)
               if isinstance(value, torch.nn.Parameter) or _is_buffer(graph_module, index)}
    with torch.no_grad():
        program = torch.export.export(graph_module, tuple(example_inputs), strict=False)
    lowered = program.module()
    placeholders = [n for n in lowered.graph.nodes if n.op == "placeholder"]
    constants = {placeholders[i].name: example_inputs[i] for i in weights}
    report = GraphReport(operators=len(_operators(lowered.graph)))
    for node in _operators(lowered.graph):
        if not supports(node):
            report.leave(op_name(node.target) or str(node.target), "hpvm has no translation")
    for part in _partition(lowered):
        operators = _operators(getattr(lowered, part).graph)
        failure = _replace_with_hpvm(lowered, part, constants, targets, options)
        if failure is None:
            report.on_hpvm += len(operators)
            continue
        for node in operators:
            report.leave(op_name(node.target), f"its piece did not compile: {failure}")
    lowered.recompile()
    report.tell()
    if reports is not None:
        reports.append(report)
    return lowered


def _operators(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The graph's ATen operator calls (not getitem or other Python calls)."""
    return [n for n in graph.nodes if n.op == "call_function"
            and op_name(n.target) not in (None, "getitem")]


def _is_buffer(graph_module: torch.fx.GraphModule, index: int) -> bool:
    """Whether placeholder ``index`` is a module buffer (running statistics):
    Dynamo names such inputs after their source."""
    nodes = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    return index < len(nodes) and "_buffers_" in nodes[index].name


def _partition(module: torch.fx.GraphModule) -> list[str]:
    """Fuse the translatable ATen calls of ``module`` into submodules;
    their names."""
    # torch (optional, heavy)
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Translatable(OperatorSupportBase):
        def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
            return node.op == "call_function" and supports(node)

    partitioner = CapabilityBasedPartitioner(module, Translatable(),
                                             allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    return [n.target for n in fused.graph.nodes
            if n.op == "call_module" and n.target.startswith("fused_")]


def _replace_with_hpvm(module: torch.fx.GraphModule, name: str, constants: dict,
                       targets: list[str], options: dict) -> str | None:
    """Compile submodule ``name`` with hpvm and call it instead; None, or
    why it stays in PyTorch."""
    part = getattr(module, name)
    call = next(n for n in module.graph.nodes if n.op == "call_module" and n.target == name)
    inner = [n for n in part.graph.nodes if n.op == "placeholder"]
    inputs, weights = {}, {}
    for placeholder, argument in zip(inner, call.args):
        if isinstance(argument, torch.fx.Node) and argument.name in constants:
            weights[placeholder.name] = constants[argument.name]
        else:
            inputs[placeholder.name] = _example(argument)
    try:
        program, outputs = convert_graph(part.graph, inputs, weights, name)
        names = [p.name for p in program.root_graph.params if p.direction == "in"]
        executable = compile(run_pipeline(program, TENSOR_PIPELINE), targets, options)
    except HpvmError as error:  # this piece stays in PyTorch
        return str(error).strip().splitlines()[0]
    setattr(module, name, HpvmPiece(executable, names, outputs, _returns_tuple(part)))
    call.args = tuple(a for a, p in zip(call.args, inner) if p.name in inputs)
    return None


def _example(node) -> torch.Tensor:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if value is None:
        raise HpvmError(f"no example value for '{node}'")
    return torch.empty(tuple(value.shape), dtype=value.dtype)


def _returns_tuple(part: torch.fx.GraphModule) -> bool:
    output = next(n for n in part.graph.nodes if n.op == "output")
    return isinstance(output.args[0], (tuple, list))


class HpvmPiece(torch.nn.Module):
    """A piece of the graph run by an hpvm Executable: torch tensors in and
    out (host arrays shared with the tensors where they are on the CPU)."""

    def __init__(self, executable, inputs: list[str], outputs: list[str], as_tuple: bool):
        super().__init__()
        self.executable = executable
        self.inputs, self.outputs, self.as_tuple = inputs, outputs, as_tuple

    def forward(self, *tensors):
        device = tensors[0].device if tensors else torch.device("cpu")
        arrays = {name: _host(t) for name, t in zip(self.inputs, tensors)}
        results = self.executable(**arrays)
        values = [torch.from_numpy(results[name]).to(device) for name in self.outputs]
        return tuple(values) if self.as_tuple else values[0]


def _host(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().contiguous().numpy()
