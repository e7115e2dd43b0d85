"""Which approximation knobs each tensor-op node of a module may take (the
search space of approximation tuning).

Every float tensor op may compute in FP16, a conv2d, gemm or matmul in
TF32, and a calibrated one in INT8 -- each precision only where one of
the tuning's targets computes it for that node (placement's rule).
conv2d may also be perforated (rows or columns, every K-th skipped; not one
with a residual summand fused in) or
have its filter sampled; pools may sample their windows.  K ranges over
EVERY (2, 3, 4) with every offset, each alone and with each reduced
precision, as in ApproxTuner.  Cheap ops (shape ops, activations, fills)
are left exact: approximating them saves nothing.
Kernel nodes (image pipelines written as kernels) take perforation of
their instances, rows or columns of the replication, with the same K.
"""
from __future__ import annotations

import dataclasses

from ...ir.graph import KernelBody, Module, Node, TensorBody
from ...ir.tensor_ops.int8 import node_scales
from ...ir.tensor_ops.precision import PRODUCT_OPS
from ...passes.approximate import EXACT
from ...passes.instance_perforation import AXIS_WORDS, perforation_refusal
from ...runtime.placement import takes

EVERY = (2, 3, 4)
TUNED_OPS = ("conv2d", "gemm", "matmul", "max_pool", "avg_pool", "batchnorm", "elementwise")
"""Ops whose nodes get knobs."""
TECHNIQUES = ("fp16", "tf32", "int8", "perforation", "sampling", "reduction-sampling")
PRECISIONS = ("fp16", "tf32", "int8")
"""The reduced precisions among the techniques (knob words as well)."""


def approximable_nodes(module: Module) -> list[str]:
    """Names of the root graph's nodes that take knobs, in order: float
    tensor ops, and kernel nodes whose instances can be perforated."""
    return [n.name for n in module.root_graph.nodes
            if _tuned(n) or _perforable_dims(module, n)]


def knob_choices(module: Module, node_name: str, techniques=TECHNIQUES,
                 every=EVERY, targets=None) -> list[str]:
    """The knobs node ``node_name`` may take, ``exact`` first; with
    ``targets`` (Target objects), only precisions one of them takes."""
    node = module.root_graph.node(node_name)
    if isinstance(node.body, KernelBody):
        if "perforation" not in techniques:
            return [EXACT]
        return [EXACT] + [f"perf-{name}-{k}-{o}" for dim, name in _perforable_dims(module, node)
                          for k in every for o in range(k)]
    out_shape = next(p.type.shape for p in node.body.params if p.direction == "out")
    op = node.body.op
    precisions = [""] + [p for p in PRECISIONS if p in techniques
                         and _precision_fits(module, node, p, targets)]
    shapes = []
    # A residual summand (``z``, fused in) is added before the activation:
    # skipped outputs would lose it, so such a conv is not perforated.
    summed = any(p.name == "z" for p in node.body.params)
    if op == "conv2d" and "perforation" in techniques and not summed:
        for axis, name in ((2, "rows"), (3, "cols")):
            if isinstance(out_shape[axis], int) and out_shape[axis] >= 2:
                shapes += [f"perf-{name}-{k}-{o}" for k in every for o in range(k)]
    if op == "conv2d" and "sampling" in techniques:
        shapes += [f"samp-{k}-{o}" for k in every for o in range(k)]
    if op in ("max_pool", "avg_pool") and "reduction-sampling" in techniques:
        kernel = node.body.attrs.get("kernel", (1, 1))
        if not any(node.body.attrs.get("padding", ())) and kernel[0] * kernel[1] >= 2:
            shapes += [f"redsamp-{k}-{o}" for k in every for o in range(k)]
    choices = [EXACT] + precisions[1:]
    for shape in shapes:
        choices += [shape + ("+" + precision if precision else "") for precision in precisions]
    return choices


def _precision_fits(module: Module, node: Node, precision: str, targets) -> bool:
    if precision in ("int8", "tf32") and node.body.op not in PRODUCT_OPS:
        return False
    if precision == "int8" and not node_scales(node):
        return False
    if targets is None:
        return True
    reduced = dataclasses.replace(node, attributes={**node.attributes, "precision": precision})
    return any(takes(t, module, module.root_graph, reduced) for t in targets)


def precisions_offered(choices: dict[str, list[str]]) -> list[str]:
    """The reduced precisions some node may take alone in ``choices``
    (node -> knobs)."""
    return [p for p in PRECISIONS if any(p in knobs for knobs in choices.values())]


def _perforable_dims(module: Module, node: Node) -> list[tuple[int, str]]:
    """(replication dimension, knob word) of each way ``node``'s instances
    can be perforated."""
    if not isinstance(node.body, KernelBody):
        return []
    return [(dim, word) for dim, word in AXIS_WORDS.items()
            if perforation_refusal(module, module.root_graph, node, dim) is None]


def _tuned(node: Node) -> bool:
    return (isinstance(node.body, TensorBody) and node.body.op in TUNED_OPS
            and all(p.type.element.is_float for p in node.body.params))
