"""The interpreter as target 'interp' and as a reference device."""
import numpy as np
import pytest

from hpvm.ir import (
    F32, I64, BindIn, BindOut, BufferType, Graph, InstanceId, KernelBody, KernelFunction,
    Load, Module, Node, Parameter, Store, Var,
)
from hpvm.interp import InterpTarget
from hpvm.target import Artifact, NodeRef

I = InstanceId(0)
VECTOR = BufferType(F32, ("N",))


def scale_module():
    params = (Parameter("x", VECTOR), Parameter("k", F32), Parameter("y", VECTOR, "out"))
    body = (Store("y", (I,), Load("x", (I,), F32) * Var("k", F32)),)
    graph = Graph("main", params, (Node("scale", KernelBody("scale"), (Var("N", I64),)),),
                  bind_ins=(BindIn("x", "scale", "x"), BindIn("k", "scale", "k")),
                  bind_outs=(BindOut("scale", "y", "y"),))
    return Module("scale", {"scale": KernelFunction("scale", params, body)},
                  {"main": graph}, "main")


def launch_scale(device):
    x = device.allocate((3,), np.float32)
    y = device.allocate((3,), np.float32)
    device.copy_in(x, np.array([1, 2, 3], np.float32))
    device.wait(device.launch(NodeRef("main", "scale"), {"x": x, "k": 2.0, "y": y}))
    return device.copy_out(y)


def test_target_is_named_interp_available_and_claims_every_node():
    target = InterpTarget()
    module = scale_module()
    graph = module.root_graph
    assert target.name == "interp" and target.availability().available
    assert target.claims(module, graph, graph.node("scale"))


def test_target_runs_every_tensor_op_natively():
    tensor_ops = pytest.importorskip("hpvm.ir.tensor_ops")
    assert InterpTarget().native_tensor_ops == frozenset(tensor_ops.TENSOR_OPS)


def test_device_launch_runs_one_node_into_the_given_buffers():
    target = InterpTarget()
    module = scale_module()
    artifact = target.compile(module, [NodeRef("main", "scale")], {})
    device = target.load(artifact, {})
    np.testing.assert_array_equal(launch_scale(device), [2, 4, 6])


def test_saved_artifact_loads_in_a_fresh_process_from_the_module_text(tmp_path):
    pytest.importorskip("hpvm.ir.text")
    target = InterpTarget()
    artifact = target.compile(scale_module(), [NodeRef("main", "scale")], {})
    artifact.save(tmp_path)
    loaded = Artifact.load(tmp_path)
    loaded.metadata["key"] = "not-in-this-process"
    np.testing.assert_array_equal(launch_scale(target.load(loaded, {})), [2, 4, 6])
