"""ONNX operators that become tensor-op nodes.

Each converter takes the graph state and one :class:`OnnxNode` and returns
the Values of the node's outputs.  Attributes the tensor ops cannot express
(auto_pad other than NOTSET/VALID/SAME_*, ceil_mode, dilated pooling ...)
raise :class:`Unsupported` naming the attribute.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import pointwise, window_taps
from .attention import attention
from .conv_transpose import conv_transpose
from .einsum import einsum
from .indexing import INDEXING_CONVERTERS, SQUEEZE_CONVERTERS
from .layout import LAYOUT_CONVERTERS
from .losses import LOSS_CONVERTERS
from .pointwise import POINTWISE_CONVERTERS
from .products import matrix_product
from .quantize import QUANTIZE_CONVERTERS
from .resize import resize
from .scatter import SCATTER_CONVERTERS
from .windows import one_dimensional
from .reductions import NORM_CONVERTERS, REDUCE_CONVERTERS, log_softmax
from .shapes import reshape_target
from .values import ConstValue, GraphState, OnnxNode, Unsupported, Value


Converter = Callable[[GraphState, OnnxNode], list[Value]]


def _inputs(state: GraphState, node: OnnxNode, ports: tuple[str, ...]) -> dict[str, Value]:
    values = {}
    for index, port in enumerate(ports):
        value = node.input(state, index)
        if value is not None:
            values[port] = value
    return values


def _spatial(node: OnnxNode, kernel: tuple[int, int], input_type, dilation=(1, 1)):
    """(stride, padding [t, l, b, r]) of a conv or pool node, with auto_pad
    resolved against the input's height and width."""
    stride = tuple(node.attr("strides", (1, 1)))
    pads = tuple(node.attr("pads", (0, 0, 0, 0)))
    auto_pad = node.text("auto_pad", "NOTSET")
    if len(stride) != 2 or len(pads) != 4:
        raise Unsupported("only 2-D convolution and pooling (NCHW) is supported",
                          "use 4-D inputs")
    if auto_pad in ("NOTSET", "VALID"):
        return stride, pads if auto_pad == "NOTSET" else (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        node.reject("auto_pad", auto_pad, "NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    begin, end = [], []
    for axis in range(2):
        size = input_type.shape[2 + axis]
        if not isinstance(size, int):
            raise Unsupported(f"auto_pad={auto_pad} needs a fixed input size",
                              "give the input fixed height and width, or explicit pads")
        extent = dilation[axis] * (kernel[axis] - 1) + 1
        out = -(-size // stride[axis])
        total = max(0, (out - 1) * stride[axis] + extent - size)
        small, large = total // 2, total - total // 2
        begin.append(large if auto_pad == "SAME_LOWER" else small)
        end.append(small if auto_pad == "SAME_LOWER" else large)
    return stride, (begin[0], begin[1], end[0], end[1])


def conv(state: GraphState, node: OnnxNode) -> list[Value]:
    if window_taps.needs_taps(node, node.input(state, 0)):
        return window_taps.conv3d(state, node)
    inputs = _inputs(state, node, ("x", "w", "b"))
    dilation = tuple(node.attr("dilations", (1, 1)))
    kernel = tuple(node.attr("kernel_shape", inputs["w"].type.shape[2:]))
    stride, padding = _spatial(node, kernel, inputs["x"].type, dilation)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation,
             "groups": node.attr("group", 1)}
    return [state.add_op(node.name, "conv2d", inputs, attrs)]


def gemm(state: GraphState, node: OnnxNode) -> list[Value]:
    inputs = _inputs(state, node, ("a", "b", "c"))
    trans_b = bool(node.attr("transB", 0))
    if trans_b and isinstance(inputs["b"], ConstValue):
        # Transposed constant weights (torch's Linear) are stored transposed
        # once, so that every product reads rows of b contiguously.
        inputs["b"] = ConstValue(np.array(inputs["b"].array.T, order="C"))
        trans_b = False
    attrs = {"alpha": float(node.attr("alpha", 1.0)), "beta": float(node.attr("beta", 1.0)),
             "trans_a": bool(node.attr("transA", 0)), "trans_b": trans_b}
    return [state.add_op(node.name, "gemm", inputs, attrs)]


def matmul(state: GraphState, node: OnnxNode) -> list[Value]:
    return [matrix_product(state, node, node.input(state, 0), node.input(state, 1))]


def binary(op: str) -> Converter:
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        return [state.add_op(node.name, op, _inputs(state, node, ("a", "b")))]
    return convert


def unary(op: str) -> Converter:
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        return [state.add_op(node.name, op, {"x": node.input(state, 0)})]
    return convert


def clip(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    if not x.type.element.is_float:
        return [_integer_clip(state, node, x)]
    info = np.finfo(x.type.element.numpy_dtype)
    bounds = []
    for index, name, default in ((1, "min", -info.max if info else None),
                                 (2, "max", info.max if info else None)):
        if len(node.inputs) > index and node.inputs[index]:
            bounds.append(float(state.constant(node.inputs[index], f"Clip's {name}")))
        else:
            bounds.append(float(node.attr(name, default)))
    return [state.add_op(node.name, "clipped_relu", {"x": x},
                         {"min": bounds[0], "max": bounds[1]})]


def _integer_clip(state: GraphState, node: OnnxNode, x: Value) -> Value:
    """Clip of integers: max and min with the bounds given (clipped_relu is
    defined on floats)."""
    for index, fn in ((1, "max"), (2, "min")):
        if len(node.inputs) > index and node.inputs[index]:
            bound = state.constant(node.inputs[index], f"Clip's {('min', 'max')[index - 1]}")
            x = pointwise.binary(state, node, fn, x, pointwise.scalar(bound, x))
    return x


def _pool_attrs(node: OnnxNode, x) -> dict:
    if any(d != 1 for d in node.attr("dilations", (1, 1))):
        node.reject("dilations", node.attr("dilations"), "no dilation in pooling")
    if len(node.outputs) > 1 and node.outputs[1]:
        raise Unsupported("MaxPool's Indices output is not supported", "drop the Indices output")
    kernel = tuple(node.attr("kernel_shape"))
    stride, padding = _spatial(node, kernel, x.type)
    if node.attr("ceil_mode", 0):
        padding = _ceil_padding(node, x, kernel, stride, padding)
    return {"kernel": kernel, "stride": stride, "padding": padding}


def _ceil_padding(node: OnnxNode, x, kernel, stride, padding) -> tuple[int, ...]:
    """``padding`` with what ceil_mode adds at the bottom and right: the
    last window may hang over the end, but must start inside the input or
    its top/left padding."""
    ends = list(padding[2:])
    for axis in range(2):
        size = x.type.shape[2 + axis]
        if not isinstance(size, int):
            raise Unsupported("ceil_mode needs a fixed input size", "give the input fixed sizes")
        span = size + padding[axis] + padding[2 + axis] - kernel[axis]
        count = -(-span // stride[axis]) + 1
        if (count - 1) * stride[axis] >= size + padding[axis]:
            count -= 1
        ends[axis] += max(0, (count - 1) * stride[axis] - span)
    return tuple(padding[:2]) + tuple(ends)


def max_pool(state: GraphState, node: OnnxNode) -> list[Value]:
    if node.attr("storage_order", 0):
        node.reject("storage_order", 1, "storage_order=0")
    x = node.input(state, 0)
    if window_taps.needs_taps(node, x) and not (len(node.outputs) > 1 and node.outputs[1]):
        return window_taps.pool(state, node, "max")
    return [state.add_op(node.name, "max_pool", {"x": x}, _pool_attrs(node, x))]


def avg_pool(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    if window_taps.needs_taps(node, x):
        return window_taps.pool(state, node, "avg")
    attrs = _pool_attrs(node, x)
    attrs["count_include_pad"] = bool(node.attr("count_include_pad", 0))
    return [state.add_op(node.name, "avg_pool", {"x": x}, attrs)]


def lp_pool(state: GraphState, node: OnnxNode) -> list[Value]:
    """LpPool: ``(sum of |x|^p over the window)^(1/p)``, the sum an average
    that counts the padding (as zeros) times the window's size."""
    x, p = node.input(state, 0), float(node.attr("p", 2))
    if window_taps.needs_taps(node, x):
        return window_taps.pool(state, node, "lp")
    attrs = {**_pool_attrs(node, x), "count_include_pad": True}
    powered = pointwise.binary(state, node, "mul", x, x) if p == 2 else pointwise.binary(
        state, node, "pow", pointwise.unary(state, node, "abs", x), pointwise.scalar(p, x))
    mean = state.step(node, "avg_pool", {"x": powered}, attrs)
    area = pointwise.scalar(float(np.prod(attrs["kernel"])), mean)
    total = pointwise.binary(state, node, "mul", mean, area)
    if p == 2:
        return [pointwise.unary(state, node, "sqrt", total)]
    return [pointwise.binary(state, node, "pow", total, pointwise.scalar(1.0 / p, total))]


def global_pool(op: str) -> Converter:
    def convert(state: GraphState, node: OnnxNode) -> list[Value]:
        x = node.input(state, 0)
        shape = x.type.shape
        if len(shape) != 4 or not all(isinstance(d, int) for d in shape[2:]):
            raise Unsupported(f"{node.op_type} needs a 4-D input of fixed height and width, "
                              f"got {x.type}", "give the input fixed spatial sizes")
        return [state.add_op(node.name, op, {"x": x}, {"kernel": tuple(shape[2:])})]
    return convert


def _along_axis(build):
    """A converter of Softmax-like ops: ``build(state, node, x, axis)``
    along ``axis``; before opset 13 the input is seen as 2-D (the axes
    before ``axis`` and the rest), so it is reshaped around the op."""
    def convert(state: GraphState, node: OnnxNode, opset: int) -> list[Value]:
        x = node.input(state, 0)
        rank = len(x.type.shape)
        axis = node.attr("axis", -1 if opset >= 13 else 1) % max(rank, 1)
        if opset >= 13 or axis == rank - 1:
            return [build(state, node, x, axis)]
        shape = x.type.shape
        if not all(isinstance(d, int) for d in shape):
            raise Unsupported(f"{node.op_type} before opset 13 with axis={axis} (not the last) "
                              f"on an input of symbolic shape {x.type}",
                              "export with opset 13 or later")
        flat = (int(np.prod(shape[:axis])), int(np.prod(shape[axis:])))
        matrix = state.step(node, "reshape", {"x": x}, {"shape": flat})
        return [state.step(node, "reshape", {"x": build(state, node, matrix, 1)},
                           {"shape": shape})]
    return convert


def _softmax(state: GraphState, node: OnnxNode, x: Value, axis: int) -> Value:
    return state.step(node, "softmax", {"x": x}, {"axis": axis})


def _hardmax(state: GraphState, node: OnnxNode, x: Value, axis: int) -> Value:
    """1 at the first largest element along ``axis``, 0 elsewhere."""
    index = state.step(node, "arg_reduce", {"x": x}, {"fn": "argmax", "axis": axis})
    shape = [1] * len(x.type.shape)
    dim = x.type.shape[axis]
    if not isinstance(dim, int):
        raise Unsupported(f"Hardmax along the symbolic size {dim}", "give that axis a fixed size")
    shape[axis] = dim
    positions = ConstValue(np.arange(dim, dtype=np.int64).reshape(shape))
    hit = state.step(node, "binary", {"a": index, "b": positions}, {"fn": "equal"})
    return state.step(node, "cast", {"x": hit}, {"to": x.type.element.name})


OPSET_CONVERTERS = {
    "Softmax": _along_axis(_softmax), "LogSoftmax": _along_axis(log_softmax),
    "Hardmax": _along_axis(_hardmax), "Resize": resize, "Upsample": resize,
    **REDUCE_CONVERTERS, **SQUEEZE_CONVERTERS,
}
"""ONNX op type -> converter that also takes the model's opset."""


def batchnorm(state: GraphState, node: OnnxNode) -> list[Value]:
    if node.attr("training_mode", 0) or len([o for o in node.outputs if o]) > 1:
        raise Unsupported("BatchNormalization in training mode is not supported",
                          "export the model in eval mode (model.eval())")
    inputs = _inputs(state, node, ("x", "scale", "bias", "mean", "var"))
    return [state.add_op(node.name, "batchnorm", inputs,
                         {"epsilon": float(node.attr("epsilon", 1e-5))})]


def prelu(state: GraphState, node: OnnxNode) -> list[Value]:
    return [state.add_op(node.name, "prelu", _inputs(state, node, ("x", "slope")))]


def lrn(state: GraphState, node: OnnxNode) -> list[Value]:
    attrs = {"size": int(node.attr("size")), "alpha": float(node.attr("alpha", 1e-4)),
             "beta": float(node.attr("beta", 0.75)), "bias": float(node.attr("bias", 1.0))}
    return [state.add_op(node.name, "lrn", {"x": node.input(state, 0)}, attrs)]


def _ints(state: GraphState, node: OnnxNode, index: int, what: str):
    """Input ``index`` as a tuple of ints (a constant), or None when absent."""
    if len(node.inputs) <= index or not node.inputs[index]:
        return None
    return tuple(int(v) for v in np.asarray(state.constant(node.inputs[index], what)).reshape(-1))


def slice_(state: GraphState, node: OnnxNode) -> list[Value]:
    """ONNX Slice: starts, ends, axes, steps as constant inputs (opset 10+)
    or attributes (before)."""
    if node.attr("starts", None) is not None:
        starts, ends = tuple(node.attr("starts")), tuple(node.attr("ends"))
        axes, steps = tuple(node.attr("axes", ())), ()
    else:
        starts = _ints(state, node, 1, "Slice's starts")
        ends = _ints(state, node, 2, "Slice's ends")
        axes = _ints(state, node, 3, "Slice's axes") or ()
        steps = _ints(state, node, 4, "Slice's steps") or ()
    x = node.input(state, 0)
    big = np.iinfo(np.int64)
    attrs = {"starts": tuple(max(min(v, big.max // 2), big.min // 2) for v in starts),
             "ends": tuple(max(min(v, big.max // 2), big.min // 2) for v in ends),
             "axes": axes, "steps": steps}
    return [state.add_op(node.name, "slice", {"x": x}, attrs)]


def transpose(state: GraphState, node: OnnxNode) -> list[Value]:
    return [state.add_op(node.name, "transpose", {"x": node.input(state, 0)},
                         {"perm": tuple(node.attr("perm", ()))})]


def pad(state: GraphState, node: OnnxNode) -> list[Value]:
    """ONNX Pad: pads, constant_value and axes as constant inputs (opset
    11+) or attributes (before); modes constant, edge and reflect."""
    x = node.input(state, 0)
    rank = len(x.type.shape)
    if node.attr("pads", None) is not None:
        pads, value, axes = tuple(node.attr("pads")), node.attr("value", 0.0), None
    else:
        pads = _ints(state, node, 1, "Pad's pads")
        given = len(node.inputs) > 2 and node.inputs[2]
        value = np.asarray(state.constant(node.inputs[2], "Pad's constant_value")).reshape(-1)[0] \
            if given else 0.0
        axes = _ints(state, node, 3, "Pad's axes")
    axes = [a % rank for a in axes] if axes else list(range(rank))
    if len(pads) != 2 * len(axes):
        raise Unsupported(f"Pad with {len(pads)} pads for {len(axes)} axes",
                          "give a leading and a trailing pad per axis")
    if any(p < 0 for p in pads):
        raise Unsupported(f"Pad with negative pads {list(pads)} (cropping)",
                          "crop with Slice instead")
    full = [0] * (2 * rank)
    for position, axis in enumerate(axes):
        full[axis], full[rank + axis] = pads[position], pads[len(axes) + position]
    attrs = {"pads": tuple(full), "mode": node.text("mode", "constant"),
             "value": float(value)}
    return [state.add_op(node.name, "pad", {"x": x}, attrs)]


def split(state: GraphState, node: OnnxNode) -> list[Value]:
    """ONNX Split: one slice per output along ``axis``; the sizes from the
    ``split`` input (opset 13+) or attribute, else equal parts (the last
    smaller, as opset 18's num_outputs)."""
    x = node.input(state, 0)
    rank = len(x.type.shape)
    axis = node.attr("axis", 0) % max(rank, 1)
    dim = x.type.shape[axis]
    if not isinstance(dim, int):
        raise Unsupported(f"Split along dimension {axis}, the symbol {dim}",
                          "give that dimension a fixed size")
    sizes = node.attr("split", None) or _ints(state, node, 1, "Split's sizes")
    count = len(node.outputs)
    if sizes is None:
        part = -(-dim // count)
        sizes = [min(part, dim - part * i) for i in range(count)]
    if any(size <= 0 for size in sizes):
        raise Unsupported(f"Split into parts of sizes {list(sizes)}: empty parts are not "
                          "supported", "split into non-empty parts")
    values, start = [], 0
    for index, size in enumerate(sizes):
        values.append(state.add_op(f"{node.name}_{index}", "slice", {"x": x},
                                   {"starts": (start,), "ends": (start + size,),
                                    "axes": (axis,)}))
        start += size
    return values


def flatten(state: GraphState, node: OnnxNode) -> list[Value]:
    return [state.add_op(node.name, "flatten", {"x": node.input(state, 0)},
                         {"axis": node.attr("axis", 1)})]


def concat(state: GraphState, node: OnnxNode) -> list[Value]:
    inputs = {f"x{i}": state.value(name) for i, name in enumerate(n for n in node.inputs if n)}
    return [state.add_op(node.name, "concat", inputs, {"axis": node.attr("axis")})]


def reshape(state: GraphState, node: OnnxNode) -> list[Value]:
    x = node.input(state, 0)
    shape = reshape_target(state, node.inputs[1], x.type)
    if node.attr("allowzero", 0) and 0 in shape:  # a size 0 that stays 0: an empty tensor
        node.reject("allowzero", 1, "allowzero=0, or no size 0 in the shape")
    return [state.add_op(node.name, "reshape", {"x": x}, {"shape": shape})]


TENSOR_CONVERTERS: dict[str, Converter] = {
    "Conv": one_dimensional(conv), "ConvTranspose": one_dimensional(conv_transpose),
    "Gemm": gemm, "MatMul": matmul,
    "Add": binary("add"), "Mul": binary("mul"),
    "Relu": unary("relu"), "Tanh": unary("tanh"), "Sigmoid": unary("sigmoid"), "Clip": clip,
    "MaxPool": one_dimensional(max_pool), "AveragePool": one_dimensional(avg_pool),
    "GlobalAveragePool": one_dimensional(global_pool("avg_pool")),
    "LpPool": one_dimensional(lp_pool),
    "GlobalMaxPool": one_dimensional(global_pool("max_pool")),
    "BatchNormalization": batchnorm, "Flatten": flatten, "Concat": concat, "Reshape": reshape,
    "PRelu": prelu, "LRN": lrn, "Slice": slice_, "Split": split, "Transpose": transpose,
    "Pad": pad, "Attention": attention, "Einsum": einsum, **POINTWISE_CONVERTERS,
    **NORM_CONVERTERS, **INDEXING_CONVERTERS, **LOSS_CONVERTERS, **QUANTIZE_CONVERTERS,
    **LAYOUT_CONVERTERS, **SCATTER_CONVERTERS,
}
"""ONNX op type -> converter (those of OPSET_CONVERTERS take the opset too)."""
