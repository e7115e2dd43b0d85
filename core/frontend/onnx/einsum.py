"""ONNX Einsum (and torch.einsum) as transposes, reshapes, sums and one
batched ``matmul`` per pair of operands.

For two operands, each label is a batch label (in both operands and the
result), a contracted one (in both, not in the result), or belongs to one
operand (summed away first unless the result keeps it).  Operand a is
arranged as [batch..., its own..., contracted...] and viewed as
[batch..., M, K], operand b as [batch..., K, N]; their product, viewed as
[batch..., a's own..., b's own...], is transposed to the result's order.
More operands are joined left to right.  A label repeated within one
operand (a diagonal) is refused.
"""
from __future__ import annotations

import numpy as np

from .indexing import view
from .values import GraphState, OnnxNode, Unsupported, Value


def _parse(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' labels and the result's, with ``...`` spelled as
    upper-case letters not used elsewhere."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"Einsum equation '{equation}' has {len(terms)} operands for "
                          f"{len(ranks)} inputs", "give one term per input")
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in equation]
    widest = max((rank - len(t.replace("...", "")) for t, rank in zip(terms, ranks)
                  if "..." in t), default=0)
    ellipsis = "".join(spare[:widest])
    terms = [t.replace("...", ellipsis[widest - (rank - len(t.replace("...", ""))):])
             for t, rank in zip(terms, ranks)]
    if not arrow:  # implicit output: the labels used once, in alphabetical order
        once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1
                      and c not in ellipsis)
        output = ellipsis + "".join(once)
    else:
        output = output.replace("...", ellipsis)
    for term in terms:
        if len(set(term)) != len(term):
            raise Unsupported(f"Einsum term '{term}' repeats a label (a diagonal)",
                              "take the diagonal another way")
    return terms, output


def _sum_away(state: GraphState, node: OnnxNode, x: Value, term: str, keep: str):
    """``x`` with the labels not in ``keep`` summed away; (value, term)."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    summed = state.step(node, "reduce", {"x": x}, {"fn": "sum", "axes": axes, "keepdims": 0})
    return summed, "".join(c for c in term if c in keep)


def _arranged(state: GraphState, node: OnnxNode, x: Value, term: str, order: str) -> Value:
    if term == order:
        return x
    perm = tuple(term.index(c) for c in order)
    return state.step(node, "transpose", {"x": x}, {"perm": perm})


def _size(sizes: dict, labels: str) -> int:
    dims = [sizes[c] for c in labels]
    if not all(isinstance(d, int) for d in dims):
        raise Unsupported(f"Einsum joins symbolic sizes {dims}", "give the model fixed sizes")
    return int(np.prod(dims))


def _pair(state: GraphState, node: OnnxNode, a: Value, ta: str, b: Value, tb: str,
          output: str) -> tuple[Value, str]:
    """The product of two operands, keeping the labels of ``output`` and
    those the two share that later operands need (all in ``output``)."""
    a, ta = _sum_away(state, node, a, ta, tb + output)
    b, tb = _sum_away(state, node, b, tb, ta + output)
    sizes = {**dict(zip(tb, b.type.shape)), **dict(zip(ta, a.type.shape))}
    batch = "".join(c for c in ta if c in tb and c in output)
    contracted = "".join(c for c in ta if c in tb and c not in output)
    own_a = "".join(c for c in ta if c not in tb)
    own_b = "".join(c for c in tb if c not in ta)
    batch_dims = [sizes[c] for c in batch]
    left = view(state, node, _arranged(state, node, a, ta, batch + own_a + contracted),
                batch_dims + [_size(sizes, own_a), _size(sizes, contracted)])
    right = view(state, node, _arranged(state, node, b, tb, batch + contracted + own_b),
                 batch_dims + [_size(sizes, contracted), _size(sizes, own_b)])
    product = state.step(node, "matmul", {"a": left, "b": right})
    result = view(state, node, product, batch_dims + [sizes[c] for c in own_a + own_b])
    return result, batch + own_a + own_b


def einsum(state: GraphState, node: OnnxNode) -> list[Value]:
    values = [state.value(name) for name in node.inputs if name]
    equation = node.text("equation", "")
    terms, output = _parse(equation, [len(v.type.shape) for v in values])
    value, term = values[0], terms[0]
    for index in range(1, len(values)):
        later = "".join(terms[index + 1:])
        value, term = _pair(state, node, value, term, values[index], terms[index],
                            output + later)
    value, term = _sum_away(state, node, value, term, output)
    return [_arranged(state, node, value, term, output)]
