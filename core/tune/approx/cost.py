"""An analytic cost model of knobs (ApproxTuner's performance prediction):
a node costs its multiply-adds (conv2d, gemm, matmul), window reads
(pools) or elements (the rest), and a knob scales that by the work it
skips -- perforation by the share of rows / columns kept, sampling by the
share of taps kept.  A reduced precision's effect (FP16, TF32, INT8)
depends on the target, so it is measured once (all nodes that take it in
that precision against all exact) and applied as a factor.  A
configuration's predicted time is the baseline's, scaled by the
predicted share of the work left.  Kernel nodes' knobs (perforated
instances) are costed by what they saved when profiled alone.
"""
from __future__ import annotations

import math

from ...ir.graph import Module, Node, TensorBody
from ...ir.tensor_ops.perforation import kept_length
from ...passes.approximate import parse_knob


def _size(shape) -> int:
    """Elements of a shape, symbols (a batch) counted as 1."""
    return math.prod(d if isinstance(d, int) else 1 for d in shape)


def node_cost(node: Node) -> float:
    """Work of one exact run of ``node`` per batch element."""
    body = node.body
    shapes = {p.name: p.type.shape for p in body.params}
    out = _size(shapes.get("y", ()))
    if body.op == "conv2d":
        return out * _size(shapes["w"][1:])
    if body.op == "gemm":
        inner = shapes["a"][0] if body.attrs.get("trans_a") else shapes["a"][-1]
        return out * (inner if isinstance(inner, int) else 1)
    if body.op == "matmul":
        inner = shapes["a"][-1]
        return out * (inner if isinstance(inner, int) else 1)
    if body.op in ("max_pool", "avg_pool"):
        kernel = body.attrs.get("kernel", (1, 1))
        return out * kernel[0] * kernel[1]
    return float(out)


def knob_factor(node: Node, knob: str, precision_factors: dict[str, float]) -> float:
    """The share of ``node``'s cost left under ``knob`` (``precision_factors``:
    precision -> measured factor)."""
    parsed = parse_knob(knob)
    factor = precision_factors.get(parsed.precision, 1.0)
    shape = next(p.type.shape for p in node.body.params if p.name == "y")
    for attr, (every, offset) in parsed.attrs.items():
        if attr in ("perforate_rows", "perforate_cols"):
            size = shape[2 if attr == "perforate_rows" else 3]
            factor *= kept_length(size, every, offset) / size
        elif attr == "sample_filter":
            factor *= (every - 1) / every
        elif attr == "sample":
            kernel = node.body.attrs.get("kernel", (1, 1))
            taps = kernel[0] * kernel[1]
            factor *= sum(1 for t in range(taps) if t % every != offset) / taps
    return factor


class CostModel:
    """Predicted seconds of configurations of ``module`` from its
    baseline's measured ``seconds``.

    Tensor-op nodes follow the analytic model above.  A kernel node's
    work is not known in the same units, so what its knob saves is the
    share of the baseline's time the knob saved when it ran alone
    (``measured``, filled in by profiling); savings add up."""

    def __init__(self, module: Module, nodes: list[str], seconds: float,
                 precision_factors: dict[str, float] | None = None):
        graph = module.root_graph
        self.nodes = {name: graph.node(name) for name in nodes
                      if isinstance(graph.node(name).body, TensorBody)}
        self.costs = {name: node_cost(node) for name, node in self.nodes.items()}
        self.total = sum(self.costs.values()) or 1.0
        self.seconds = seconds
        self.precision_factors = dict(precision_factors or {})
        self.measured: dict[tuple[str, str], float] = {}
        """(node, knob) -> share of the baseline's time saved alone."""

    def record(self, node: str, knob: str, seconds: float) -> None:
        """A measured run of ``knob`` alone on a node the analytic model
        does not cover."""
        if node not in self.nodes:
            self.measured[(node, knob)] = 1 - seconds / self.seconds

    def predict(self, config: dict[str, str]) -> float:
        saved = sum(self.costs[n] * (1 - knob_factor(self.nodes[n], k, self.precision_factors))
                    for n, k in config.items() if n in self.nodes) / self.total
        saved += sum(self.measured.get((n, k), 0.0) for n, k in config.items())
        return self.seconds * max(1 - saved, 0.02)
