"""Activations stored channels-last between the cpu's nodes
(hpvm.passes.channels_last): graphs of convolutions and pools as models
build them, each run on the cpu with the option on and off and checked
against the interpreter, and where the values are stored so."""
import numpy as np
import pytest

import hpvm
from hpvm.interp import run_module
from hpvm.ir import Parameter
from hpvm.ir.graph import BindIn, BindOut, ConstantBody, Edge, Graph, Module, Node
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of
from hpvm.passes.channels_last import CHANNELS_LAST_ATTRIBUTE
from hpvm.runtime import Executable

RELU6 = ("clipped_relu", 0.0, 6.0)


def layers_module(x_shape, layers, outputs=("y",), seed=0) -> Module:
    """A graph of tensor nodes fed by input ``x``: ``layers`` is a list of
    (name, op, attrs, {port: constant shape}, {port: source node}); a
    source "x" is the graph input; ``outputs`` are nodes whose ``y`` is a
    graph output of that name (the last layer's: ``y``)."""
    rng = np.random.default_rng(seed)
    types = {"x": types_of(x=np.zeros(x_shape, np.float32))["x"]}
    nodes, edges, binds = [], [], []
    for name, op, attrs, constants, sources in layers:
        inputs = {port: types[source] for port, source in sources.items()}
        for port, shape in constants.items():
            array = (rng.standard_normal(shape) * 0.2).astype(np.float32)
            inputs[port] = types_of(a=array)["a"]
            nodes.append(Node(f"{name}_{port}", ConstantBody(inputs[port], array)))
            edges.append(Edge(f"{name}_{port}", "value", name, port))
        node = tensor_node(name, op, inputs, attrs)
        nodes.append(node)
        types[name] = get_op(op).infer(inputs, attrs)["y"]
        for port, source in sources.items():
            if source == "x":
                binds.append(BindIn("x", name, port))
            else:
                edges.append(Edge(source, "y", name, port))
    last = layers[-1][0]
    named = {"y": last, **{out: out for out in outputs if out != "y"}}
    params = (Parameter("x", types["x"], "in"),) + tuple(
        Parameter(out, types[node], "out") for out, node in named.items())
    graph = Graph("main", params, tuple(nodes), tuple(edges), tuple(binds),
                  tuple(BindOut(node, "y", out) for out, node in named.items()))
    return Module("m", {}, {"main": graph}, "main")


def conv(name, x, channels, kernels, size=3, stride=1, groups=1, z=None,
         activation=RELU6):
    pad = size // 2
    sources = {"x": x, **({"z": z} if z else {})}
    return (name, "conv2d", {"stride": (stride, stride), "padding": (pad,) * 4,
                             "groups": groups, "activation": activation},
            {"w": (kernels, channels // groups, size, size), "b": (kernels,)}, sources)


def stored(exe) -> dict[str, str]:
    """Node -> its ports stored channels-last, in the cpu's lowered module."""
    graph = exe.artifacts["cpu"].live["module"].root_graph
    return {n.name: n.attributes[CHANNELS_LAST_ATTRIBUTE] for n in graph.nodes
            if CHANNELS_LAST_ATTRIBUTE in n.attributes}


def run_both_ways(module, x, calls=2):
    """The cpu's results with and without channels-last storage, each
    equal to the interpreter's; the executable that stores them so."""
    expected = run_module(module, {"x": x})
    exes = {}
    for channels_last in (True, False):
        exes[channels_last] = exe = hpvm.compile(
            module, targets=["cpu"], options={"threads": 2, "channels_last": channels_last})
        for _ in range(calls):
            for name, value in exe(x=x).items():
                np.testing.assert_allclose(value, expected[name], rtol=2e-4, atol=2e-4)
    assert not stored(exes[False])
    return exes[True]


def test_inverted_residual_blocks_store_their_activations_channels_last():
    """MobileNetV2's blocks: a stem, expansions, depthwise convolutions of
    stride 1 and 2, projections (too small to pack: row tiles) with a
    residual summand, and global average pooling."""
    layers = [conv("stem", "x", 8, 32, stride=2),
              conv("expand1", "stem", 32, 64, size=1),
              conv("depthwise1", "expand1", 64, 64, stride=2, groups=64),
              conv("project1", "depthwise1", 64, 24, size=1, activation="none"),
              conv("expand2", "project1", 24, 96, size=1),
              conv("depthwise2", "expand2", 96, 96, groups=96),
              conv("project2", "depthwise2", 96, 24, size=1, z="project1", activation="none"),
              conv("head", "project2", 24, 48, size=1),
              ("pool", "avg_pool", {"kernel": (5, 5)}, {}, {"x": "head"})]
    x = np.random.default_rng(1).standard_normal((2, 8, 20, 20)).astype(np.float32)
    exe = run_both_ways(layers_module(x.shape, layers), x)
    ports = stored(exe)
    for name in ("expand1", "depthwise1", "project1", "expand2", "depthwise2", "head"):
        assert "y" in ports[name].split(","), (name, ports)
    assert ports["project2"] == "x,y,z"
    assert ports["pool"] == "x"  # the graph's result is stored NCHW


def test_residual_stages_with_a_max_pool_store_channels_last(tmp_path):
    """ResNet's stages: a max pool after the stem, 3x3 convolutions with
    summands, a strided stage with a strided 1x1 downsampling."""
    layers = [conv("stem", "x", 3, 16, size=7, stride=2),
              ("pool", "max_pool", {"kernel": (3, 3), "stride": (2, 2), "padding": (1,) * 4},
               {}, {"x": "stem"}),
              conv("a", "pool", 16, 32),
              conv("b", "a", 32, 32, z="a", activation="relu"),
              conv("down", "b", 32, 48, size=1, stride=2, activation="none"),
              conv("c", "b", 32, 48, stride=2),
              conv("d", "c", 48, 48, z="down", activation="relu")]
    x = np.random.default_rng(2).standard_normal((2, 3, 36, 36)).astype(np.float32)
    module = layers_module(x.shape, layers)
    exe = run_both_ways(module, x)
    ports = stored(exe)
    assert ports["a"] == "y" and ports["b"] == "x,y,z"
    assert ports["c"] == "x,y" and ports["d"] == "x,z"
    exe.save(tmp_path / "stages.hpvmx")  # the layouts are in the kernels
    loaded = Executable.load(tmp_path / "stages.hpvmx")
    np.testing.assert_allclose(loaded(x=x)["y"], run_module(module, {"x": x})["y"],
                               rtol=2e-4, atol=2e-4)


def test_values_read_outside_stay_nchw():
    """A value that is a graph output, or read by a node without a
    channels-last lowering (an unfused relu), is stored NCHW; the rest of
    the graph still stores channels-last."""
    layers = [conv("a", "x", 16, 32, activation="none"),
              ("relu", "relu", {}, {}, {"x": "a"}),
              conv("b", "a", 32, 32),
              conv("c", "b", 32, 32),
              conv("d", "c", 32, 32, z="relu")]
    x = np.random.default_rng(3).standard_normal((1, 16, 12, 12)).astype(np.float32)
    exe = run_both_ways(layers_module(x.shape, layers, outputs=("y", "b")), x)
    ports = stored(exe)
    assert "a" not in ports and "b" not in ports
    assert ports["c"] == "y" and ports["d"] == "x"


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("expanded", [True, False])
def test_depthwise_convolutions_channels_last_match_the_interpreter(stride, dilation,
                                                                    expanded):
    """Read in place (after an expansion that stores channels-last, on
    images wide enough for inner columns and for blocks of pixels) or
    copied from the graph's NCHW input."""
    channels = 48
    layers = [conv("expand", "x", 8, channels, size=1)] if expanded else []
    layers += [("dw", "conv2d", {"stride": (stride, stride), "padding": (2, 1, 1, 2),
                                 "dilation": (dilation, dilation), "groups": channels},
                {"w": (channels, 1, 3, 3)}, {"x": "expand" if expanded else "x"}),
               conv("project", "dw", channels, 32, size=1, activation="none")]
    x = np.random.default_rng(4).standard_normal(
        (2, 8 if expanded else channels, 11, 23)).astype(np.float32)
    exe = run_both_ways(layers_module(x.shape, layers), x)
    assert stored(exe)["dw"] == ("x,y" if expanded else "y")


def test_pools_of_one_image_match_the_interpreter():
    """A max pool and a global average pool of one image (whose channels
    are split over the cores)."""
    layers = [conv("a", "x", 16, 64),
              ("max", "max_pool", {"kernel": (2, 2), "stride": (2, 2)}, {}, {"x": "a"}),
              conv("b", "max", 64, 64, size=1),
              ("pool", "avg_pool", {"kernel": (4, 5)}, {}, {"x": "b"})]
    x = np.random.default_rng(5).standard_normal((1, 16, 8, 10)).astype(np.float32)
    exe = run_both_ways(layers_module(x.shape, layers), x)
    assert stored(exe) == {"a": "y", "max": "x,y", "b": "x,y", "pool": "x"}


def test_the_layout_is_a_tuning_knob_where_there_are_convolutions():
    from hpvm.registry import get_registry
    from hpvm.target import NodeRef
    cpu = get_registry().target("cpu").target
    layers = [conv("a", "x", 16, 32), conv("b", "a", 32, 32)]
    module = layers_module((1, 16, 8, 8), layers)
    nodes = [NodeRef("main", n.name) for n in module.root_graph.nodes]
    assert "channels_last" in {k.name for k in cpu.knobs(module, nodes)}
    relu = layers_module((1, 16, 8, 8), [("r", "relu", {}, {}, {"x": "x"})])
    assert "channels_last" not in {k.name for k in cpu.knobs(relu, [NodeRef("main", "r")])}


@pytest.mark.parametrize("size", [1, 3])
def test_a_summand_stored_unlike_the_result(size):
    """A convolution whose residual summand is a graph output (NCHW) while
    its input and result are stored channels-last: a 1x1 one (packed,
    the summand's index moved from the result's) and a 3x3 one."""
    layers = [conv("a", "x", 16, 32, activation="none"),
              conv("b", "x", 16, 32),
              conv("c", "b", 32, 32, size=size, z="a"),
              conv("d", "c", 32, 32, size=1)]
    x = np.random.default_rng(6).standard_normal((2, 16, 9, 9)).astype(np.float32)
    exe = run_both_ways(layers_module(x.shape, layers, outputs=("y", "a")), x)
    assert stored(exe)["c"] == "x,y"
