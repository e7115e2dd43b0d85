"""Small tensor programs for the nvdla tests, one hardware-layer kind each,
with constant weights (NVDLA's live in the loadable)."""
import numpy as np

from hpvm.ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, Module, Node
from hpvm.ir.parameter import Parameter
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.types import F32, BufferType

RNG = np.random.default_rng(0)


class Builder:
    """A graph of tensor nodes over one input ``x`` of shape ``[N, *shape]``."""

    def __init__(self, shape):
        self.nodes, self.edges, self.types = [], [], {}
        self.input_type = BufferType(F32, ("N",) + tuple(shape))
        self.types["x"] = self.input_type
        self._inputs: dict = {}

    def const(self, name, array):
        array = np.asarray(array, np.float32)
        self.nodes.append(Node(name, ConstantBody(BufferType(F32, array.shape), array)))
        self.types[name] = BufferType(F32, array.shape)
        return name

    def op(self, name, op, inputs, attrs=None):
        """``inputs``: port -> a value ("x", a node name or a constant name)."""
        node = tensor_node(name, op, {port: self.types[v] for port, v in inputs.items()}, attrs)
        self.nodes.append(node)
        for port, value in inputs.items():
            if value == "x":
                self._inputs.setdefault("x", []).append((name, port))
            else:
                self.edges.append(Edge(value, "value" if self._is_const(value) else "y",
                                       name, port))
        self.types[name] = next(p.type for p in node.body.params if p.direction == "out")
        return name

    def _is_const(self, value):
        return any(n.name == value and isinstance(n.body, ConstantBody) for n in self.nodes)

    def build(self, output) -> Module:
        binds = tuple(BindIn("x", node, port) for node, port in self._inputs["x"])
        graph = Graph("main", (Parameter("x", self.input_type, "in"),
                               Parameter("y", self.types[output], "out")),
                      tuple(self.nodes), tuple(self.edges), binds, (BindOut(output, "y", "y"),))
        return Module("m", {}, {"main": graph}, "main")


def weights(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def conv_layer(groups=1, dilation=(1, 1), activation="relu", batchnorm=False):
    b = Builder((8, 9, 9))
    w = b.const("w", weights(8, 8 // groups, 3, 3))
    bias = b.const("bias", weights(8))
    out = b.op("conv", "conv2d", {"x": "x", "w": w, "b": bias},
               {"padding": (1, 1, 1, 1), "groups": groups, "dilation": dilation,
                "activation": activation})
    if batchnorm:
        stats = {k: b.const(k, v) for k, v in {
            "scale": RNG.uniform(0.5, 1.5, 8), "shift": weights(8), "mean": weights(8),
            "var": RNG.uniform(0.5, 2.0, 8)}.items()}
        out = b.op("bn", "batchnorm", {"x": out, "scale": stats["scale"], "bias": stats["shift"],
                                       "mean": stats["mean"], "var": stats["var"]})
    return b.build(out)


def residual():
    """relu(conv(x) + x): convolution, element-wise add of a second tensor, relu."""
    b = Builder((8, 6, 6))
    c = b.op("conv", "conv2d", {"x": "x", "w": b.const("w", weights(8, 8, 3, 3))},
             {"padding": (1, 1, 1, 1)})
    s = b.op("sum", "add", {"a": c, "b": "x"})
    return b.build(b.op("act", "relu", {"x": s}))


def pooling(method, padding=(0, 0, 0, 0), count_include_pad=False):
    b = Builder((4, 7, 7))
    attrs = {"kernel": (3, 3), "stride": (2, 2), "padding": padding}
    if method == "avg_pool":
        attrs["count_include_pad"] = count_include_pad
    return b.build(b.op("pool", method, {"x": "x"}, attrs))


def sdp_alone(activation):
    """Element-wise ops with no convolution before them: one SDP layer."""
    b = Builder((4, 5, 5))
    m = b.op("scale", "mul", {"a": "x", "b": b.const("m", RNG.uniform(0.5, 2, (4, 1, 1)))})
    a = b.op("shift", "bias_add", {"x": m, "b": b.const("c", weights(4))})
    return b.build(b.op("act", activation, {"x": a}) if activation != "clip" else
                   b.op("act", "clipped_relu", {"x": a}, {"min": -0.2, "max": 0.4}))


def fully_connected():
    b = Builder((4, 3, 3))
    f = b.op("flat", "flatten", {"x": "x"})
    g = b.op("fc", "gemm", {"a": f, "b": b.const("w", weights(10, 36)), "c": b.const("c", weights(10))},
             {"trans_b": True, "activation": "tanh"})
    return b.build(b.op("out", "sigmoid", {"x": g}))


def concatenation():
    b = Builder((4, 5, 5))
    one = b.op("one", "conv2d", {"x": "x", "w": b.const("w1", weights(3, 4, 1, 1))})
    two = b.op("two", "conv2d", {"x": "x", "w": b.const("w2", weights(5, 4, 3, 3))},
               {"padding": (1, 1, 1, 1)})
    return b.build(b.op("cat", "concat", {"x0": one, "x1": two}, {"axis": 1}))


def conv_prelu():
    b = Builder((8, 6, 6))
    c = b.op("conv", "conv2d", {"x": "x", "w": b.const("w", weights(8, 8, 3, 3)),
                                "b": b.const("bias", weights(8))}, {"padding": (1, 1, 1, 1)})
    return b.build(b.op("act", "prelu", {"x": c, "slope": b.const("slope", RNG.uniform(
        0.05, 0.3, (8, 1, 1)))}))


def normalisation(size):
    b = Builder((6, 4, 4))
    return b.build(b.op("norm", "lrn", {"x": "x"},
                        {"size": size, "alpha": 0.4, "beta": 0.75, "bias": 1.5}))


def channel_split():
    """An ONNX Split along channels: two slices, each read by its own layer."""
    b = Builder((6, 4, 4))
    low = b.op("low", "slice", {"x": "x"}, {"starts": (0,), "ends": (2,), "axes": (1,)})
    high = b.op("high", "slice", {"x": "x"}, {"starts": (2,), "ends": (6,), "axes": (-3,)})
    left = b.op("left", "relu", {"x": low})
    right = b.op("right", "sigmoid", {"x": high})
    return b.build(b.op("cat", "concat", {"x0": right, "x1": left}, {"axis": 1}))


LAYER_PROGRAMS = {
    "channel split": channel_split,
    "conv+bias+prelu": conv_prelu,
    "cdp lrn": lambda: normalisation(3),
    "cdp lrn, even window": lambda: normalisation(4),
    "conv+bias+relu": conv_layer,
    "conv+bias+relu6": lambda: conv_layer(activation=("clipped_relu", 0.0, 6.0)),
    "conv+bn folded": lambda: conv_layer(activation="none", batchnorm=True),
    "depthwise conv": lambda: conv_layer(groups=8),
    "dilated conv": lambda: conv_layer(dilation=(2, 2)),
    "conv+add_tensor+relu": residual,
    "pdp max": lambda: pooling("max_pool", (1, 1, 1, 1)),
    "pdp avg": lambda: pooling("avg_pool", (1, 1, 1, 1)),
    "pdp avg counting pads": lambda: pooling("avg_pool", (1, 1, 1, 1), True),
    "sdp sigmoid": lambda: sdp_alone("sigmoid"),
    "sdp tanh": lambda: sdp_alone("tanh"),
    "sdp clip": lambda: sdp_alone("clip"),
    "fc+tanh, sigmoid": fully_connected,
    "concat": concatenation,
}
