"""Hardware layers: the tensor ops of one launch grouped as NVDLA runs them.

NVDLA has a convolution pipeline (CDMA -> CSC -> CMAC -> CACC) whose
result streams into the single-data-point processor (SDP) without going
to memory, a planar data processor (PDP) for pooling, and a channel data
processor (CDP) for LRN.  As NVDLA's compiler does, a convolution or fully
connected op and the element-wise ops that follow it (bias, batch-norm,
add or multiply with a second tensor or a per-channel constant, ReLU,
clipping, PReLU, sigmoid/tanh by lookup table) become one hardware layer;
pooling is a PDP layer, local response normalisation (LRN) a CDP layer;
element-wise ops with no convolution before them are an SDP layer of
their own; concatenation along channels is memory layout (the producers
write into slices of one surface), and so is a channel split (a slice of
channels: its readers read a sub-surface).

A value is named ``node.port`` inside the launch, or by the launch's in
port.  :func:`build_layers` walks the members producers-first and returns
the layers in execution order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpvm.ir.graph import ConstantBody, Graph, TensorBody
from hpvm.ir.tensor_ops import get_op
from hpvm.ir.tensor_ops.activation import clip_bounds
from hpvm.passes.outline import Members

CONV_OPS = ("conv2d",)
FC_OPS = ("gemm", "matmul")
SDP_OPS = ("bias_add", "batchnorm", "add", "mul", "relu", "clipped_relu", "sigmoid", "tanh",
           "prelu", "elementwise")
CDP_OPS = ("lrn",)
PDP_OPS = ("max_pool", "avg_pool")
LAYOUT_OPS = ("concat", "flatten", "slice")
ENGINE_OF = {**{op: "conv" for op in CONV_OPS}, **{op: "fc" for op in FC_OPS},
             **{op: "sdp" for op in SDP_OPS}, **{op: "pdp" for op in PDP_OPS},
             **{op: "cdp" for op in CDP_OPS},
             "concat": "concat", "flatten": "flatten", "slice": "slice"}


class NotForNvdla(Exception):
    """The op cannot run on NVDLA as used (the message says why)."""


@dataclass
class Layer:
    """One hardware layer.  ``kind``: conv, fc, sdp, pdp, cdp, concat or
    slice (a channel range: ``attrs["channels"]`` = (start, stop));
    ``inputs``: the value names it reads (the feature input first, then
    the second tensors of its SDP steps); ``steps``: the SDP operations
    after the core, each ``(name, operand)``: ``add_tensor`` / ``mul_tensor``
    (operand: a value name), ``add_channel`` / ``mul_channel`` (operand: a
    per-channel array), ``relu``, ``clip`` ((low, high)), ``prelu`` (the
    per-channel slope), ``sigmoid``, ``tanh``."""

    name: str
    kind: str
    nodes: list[str]
    inputs: list[str]
    output: str
    shape: tuple[int, ...]
    attrs: dict = field(default_factory=dict)
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None
    steps: list[tuple] = field(default_factory=list)

    @property
    def ops(self) -> str:
        """The layer in words: ``conv+bias+add_tensor+relu``."""
        core = [self.kind] if self.kind != "sdp" else []
        if self.bias is not None:
            core.append("bias")
        return "+".join(core + [s[0] for s in self.steps]) or self.kind


def build_layers(members: Members, shapes: dict[str, tuple[int, ...]]) -> list[Layer]:
    """The hardware layers of ``members`` (module docstring).  ``shapes``:
    each member output value's concrete shape.  NotForNvdla when a member
    has no NVDLA form."""
    graph = members.graph
    feeds = {(e.dst_node, e.dst_port): f"{e.src_node}.{e.src_port}" for e in graph.edges}
    feeds.update(members.feeds)
    readers: dict[str, int] = {}
    for value in feeds.values():
        readers[value] = readers.get(value, 0) + 1
    outside = {f"{node}.{port}" for _, (node, port) in members.results}
    constants = {f"{n.name}.value": n.body.data for n in graph.nodes
                 if isinstance(n.body, ConstantBody)}
    aliases: dict[str, str] = {}   # flatten outputs: the cube they reshape
    layers: list[Layer] = []
    open_layer: dict[str, Layer] = {}  # value -> the layer that may still absorb its reader
    for name in members.names:
        node = graph.node(name)
        if isinstance(node.body, ConstantBody):
            continue
        body = node.body
        if not isinstance(body, TensorBody) or body.op not in ENGINE_OF:
            raise NotForNvdla(f"'{name}' is not a tensor op NVDLA runs")
        attrs = get_op(body.op, name).resolve_attrs(body.attrs)
        inputs = {p.name: aliases.get(feeds[(name, p.name)], feeds[(name, p.name)])
                  for p in body.params if p.direction == "in" and (name, p.name) in feeds}
        out = next(p.name for p in body.params if p.direction == "out")
        value = f"{name}.{out}"
        shape = shapes[value]
        engine = ENGINE_OF[body.op]
        if engine == "flatten":
            aliases[value] = inputs["x"]
            continue
        if engine in ("sdp",):
            main, steps = _sdp_steps(body.op, attrs, inputs, constants, shape)
            layer = open_layer.pop(main, None)
            if layer is not None and readers.get(main) == 1 and main not in outside:
                if body.op == "batchnorm" and not layer.steps and layer.weight is not None:
                    _fold_batchnorm(layer, steps)
                else:
                    layer.steps.extend(steps)
                layer.nodes.append(name)
                layer.inputs.extend(s[1] for s in steps if s[0].endswith("_tensor"))
                layer.output, layer.shape = value, shape
                open_layer[value] = layer
                continue
            layer = Layer(name, "sdp", [name], [main] + [s[1] for s in steps
                                                         if s[0].endswith("_tensor")],
                          value, shape, steps=steps)
        elif engine in ("conv", "fc"):
            layer = _core_layer(engine, body.op, name, attrs, inputs, constants, value, shape)
        elif engine == "pdp":
            layer = Layer(name, "pdp", [name], [inputs["x"]], value, shape,
                          {"method": body.op, **attrs})
        elif engine == "cdp":
            layer = Layer(name, "cdp", [name], [inputs["x"]], value, shape, dict(attrs))
        elif engine == "slice":
            x_shape = next(p.type.shape for p in body.params if p.name == "x")
            start = _channel_slice(attrs, x_shape, name)
            layer = Layer(name, "slice", [name], [inputs["x"]], value, shape,
                          {"channels": (start, start + shape[1])})
        else:
            layer = Layer(name, "concat", [name], [inputs[f"x{i}"] for i in range(len(inputs))],
                          value, shape, {"axis": attrs["axis"]})
        layers.append(layer)
        if layer.kind in ("conv", "fc", "sdp"):
            open_layer[value] = layer
    return layers


def _channel_slice(attrs: dict, x_shape: tuple, name: str) -> int:
    """The first channel of a slice taking a channel range with step 1."""
    from hpvm.ir.tensor_ops.shape_ops import clamped_ranges
    ranges = clamped_ranges(x_shape, attrs)
    if list(ranges) != [1] or ranges[1][2] != 1:
        raise NotForNvdla(f"'{name}' slices along other axes than the channels, or with a "
                          "step: that moves data")
    return ranges[1][0]


def _core_layer(engine, op, name, attrs, inputs, constants, value, shape) -> Layer:
    """A convolution or fully connected layer with its weights (and bias,
    and the activation the op carries as its first SDP step)."""
    if op == "conv2d":
        weight, bias = _constant(constants, inputs["w"], name, "w"), None
        if "b" in inputs:
            bias = _constant(constants, inputs["b"], name, "b")
        layer = Layer(name, "conv", [name], [inputs["x"]], value, shape,
                      {key: attrs[key] for key in ("stride", "padding", "dilation", "groups")},
                      weight, bias)
        if "z" in inputs:  # a residual summand: SDP's element-wise add, before the activation
            layer.steps.append(("add_tensor", inputs["z"]))
            layer.inputs.append(inputs["z"])
    else:
        b = _constant(constants, inputs["b"], name, "b")
        if op == "gemm":
            if attrs["trans_a"]:
                raise NotForNvdla(f"'{name}': a transposed feature input (trans_a)")
            weight = (b if attrs["trans_b"] else b.T) * np.float32(attrs["alpha"])
            bias = None
            if "c" in inputs:
                c = _constant(constants, inputs["c"], name, "c") * np.float32(attrs["beta"])
                bias = np.broadcast_to(c, (weight.shape[0],)).astype(np.float32)
        else:
            weight, bias = b.T, None
        layer = Layer(name, "fc", [name], [inputs["a"]], value, shape, {},
                      np.ascontiguousarray(weight, np.float32), bias)
    activation = attrs.get("activation", "none")
    bounds = clip_bounds(activation)
    if bounds is not None:
        layer.steps.append(("clip", bounds))
    elif activation != "none":
        layer.steps.append((activation, None))
    return layer


def _sdp_steps(op, attrs, inputs, constants, shape) -> tuple[str, list[tuple]]:
    """(the value an element-wise op transforms, its SDP steps)."""
    if op in ("relu", "sigmoid", "tanh"):
        return inputs["x"], [(op, None)]
    if op == "clipped_relu":
        return inputs["x"], [("clip", (float(attrs["min"]), float(attrs["max"])))]
    if op == "prelu":
        if inputs["slope"] not in constants:
            raise NotForNvdla("PReLU's slope must be a constant (one value per channel)")
        return inputs["x"], [("prelu", _channel(constants, inputs["slope"], shape, "slope"))]
    if op == "bias_add":
        if attrs["axis"] % len(shape) != 1:
            raise NotForNvdla("bias_add along another axis than channels")
        return inputs["x"], [("add_channel", _channel(constants, inputs["b"], shape, "b",
                                                      along_channels=True))]
    if op == "batchnorm":
        get = {port: _channel(constants, inputs[port], shape, port, along_channels=True)
               for port in ("scale", "bias", "mean", "var")}
        factor = get["scale"] / np.sqrt(get["var"] + np.float32(attrs["epsilon"]))
        return inputs["x"], [("mul_channel", factor.astype(np.float32)),
                             ("add_channel", (get["bias"] - get["mean"] * factor).astype(np.float32))]
    if op in ("add", "mul"):
        return _binary(op, inputs["a"], inputs["b"], constants, shape)
    main, steps = inputs["x0"], []
    for step in attrs["steps"]:
        if step[0] in ("add", "mul"):
            steps.extend(_binary(step[0], main, inputs[f"x{step[1]}"], constants, shape)[1])
        elif step[0] == "clipped_relu":
            steps.append(("clip", (float(step[1]), float(step[2]))))
        elif step[0] in ("relu", "tanh", "sigmoid"):
            steps.append((step[0], None))
        else:
            raise NotForNvdla(f"a fused step {step[0]} {step[1]}: the SDP adds, multiplies, "
                              "clips, and applies relu, tanh and sigmoid")
    return main, steps


def _binary(op, a, b, constants, shape):
    """add/mul: a tensor of the result's shape with a second tensor of the
    same shape, or with a per-channel constant."""
    if b in constants or a in constants:
        main, other = (a, b) if b in constants else (b, a)
        return main, [(f"{op}_channel", _channel(constants, other, shape, "b"))]
    return a, [(f"{op}_tensor", b)]


def _constant(constants, value, node, port) -> np.ndarray:
    if value not in constants:
        raise NotForNvdla(f"'{node}': input '{port}' must be a constant (NVDLA's weights "
                          "live in the loadable)")
    return np.asarray(constants[value], np.float32)


def _channel(constants, value, shape, port, along_channels=False) -> np.ndarray:
    """A constant operand as one value per channel (axis 1): a scalar, a
    1-D array along the channels (``along_channels``, bias_add's), or an
    array broadcasting (numpy rules) only along the channels."""
    data = _constant(constants, value, "element-wise op", port)
    channels = shape[1] if len(shape) > 1 else 1
    if data.size == 1:
        return np.full(channels, data.reshape(-1)[0], np.float32)
    aligned = data.shape if along_channels else (1,) * (len(shape) - data.ndim) + data.shape
    if along_channels:
        aligned = (1, data.size)
    if (len(aligned) > len(shape) or aligned[1:2] != (channels,)
            or any(d != 1 for i, d in enumerate(aligned) if i != 1)):
        raise NotForNvdla(f"a constant of shape {data.shape} is neither per channel nor a scalar")
    return data.reshape(-1).astype(np.float32)


def _fold_batchnorm(layer: Layer, steps: list[tuple]) -> None:
    """Batch-norm right after a convolution folded into its weights and
    bias (what NVDLA's compiler does)."""
    (_, factor), (_, shift) = steps
    layer.weight = (layer.weight * factor.reshape((-1,) + (1,) * (layer.weight.ndim - 1))
                    ).astype(np.float32)
    bias = layer.bias if layer.bias is not None else np.zeros(len(factor), np.float32)
    layer.bias = (bias * factor + shift).astype(np.float32)


def graph_layer_kinds(graph: Graph) -> dict[str, str]:
    """Each tensor node's engine (conv, fc, sdp, pdp, concat, flatten)."""
    return {n.name: ENGINE_OF[n.body.op] for n in graph.nodes
            if isinstance(n.body, TensorBody) and n.body.op in ENGINE_OF}
