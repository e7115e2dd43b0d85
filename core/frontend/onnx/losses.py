"""ONNX's loss operators, NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss, as compositions: the log-probability of each
target class picked with ``gather_elements``, its class weight with
``gather``, targets equal to ``ignore_index`` weighted 0 by ``select``,
then the reduction (none, sum, or the mean over the weights)."""
from __future__ import annotations

import numpy as np

from .indexing import view
from .pointwise import binary, scalar, select, unary
from .reductions import log_softmax, reduce
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


def _reduction(node: OnnxNode) -> str:
    value = node.text("reduction", "mean")
    if value not in ("none", "sum", "mean"):
        node.reject("reduction", value, "reduction none, sum or mean")
    return value


def negative_log_likelihood(state: GraphState, node: OnnxNode, log_probability: Value,
                            target: Value, weight: Value | None) -> Value:
    """The loss of ``log_probability`` [N, C, d...] at ``target`` [N, d...]."""
    shape = target.type.shape
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported(f"{node.op_type} with symbolic target sizes {target.type}",
                          "give the model fixed sizes")
    ignore = node.attr("ignore_index", None)
    ignored = None
    if ignore is not None:
        ignored = binary(state, node, "equal", target, scalar(ignore, target))
        target = select(state, node, ignored, scalar(0, target), target)
    column = view(state, node, target, (shape[0], 1) + tuple(shape[1:]))
    picked = state.step(node, "gather_elements", {"x": log_probability, "indices": column},
                        {"axis": 1})
    picked = view(state, node, picked, shape)
    weights = None
    if weight is not None:
        weights = state.step(node, "gather", {"x": weight, "indices": target}, {"axis": 0})
    if ignored is not None:
        kept = weights if weights is not None else ConstValue(
            np.ones(shape, log_probability.type.element.numpy_dtype))
        weights = select(state, node, ignored, scalar(0.0, log_probability), kept)
    loss = unary(state, node, "neg", picked if weights is None else
                 binary(state, node, "mul", picked, weights))
    reduction = _reduction(node)
    if reduction == "none":
        return loss
    total = reduce(state, node, "sum", loss, (), 0)
    if reduction == "sum":
        return total
    if weights is None:
        return binary(state, node, "div", total, scalar(int(np.prod(shape)), total))
    return binary(state, node, "div", total, reduce(state, node, "sum", weights, (), 0))


def nll_loss(state: GraphState, node: OnnxNode) -> list[Value]:
    return [negative_log_likelihood(state, node, node.input(state, 0), node.input(state, 1),
                                    node.input(state, 2))]


def softmax_cross_entropy(state: GraphState, node: OnnxNode) -> list[Value]:
    scores = node.input(state, 0)
    log_probability = log_softmax(state, node, scores, 1)
    loss = negative_log_likelihood(state, node, log_probability, node.input(state, 1),
                                   node.input(state, 2))
    return [loss, log_probability][:len(node.outputs)]


LOSS_CONVERTERS = {"NegativeLogLikelihoodLoss": nll_loss,
                   "SoftmaxCrossEntropyLoss": softmax_cross_entropy}
