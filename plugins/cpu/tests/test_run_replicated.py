"""CompiledKernel.run_replicated (the cpu device's launch path) sizes the
replication from the symbols its arguments bind and still checks them; a
bound launch (the static schedule's) holds a run's arrays only while it
runs."""
import weakref

import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.ir.tensor_ops import tensor_node
from hpvm.ir.tensor_ops.testing import evaluate_node, lowered_module
from hpvm.ir.types import F32, BufferType
from hpvm_cpu.codegen import compile_kernel_node


def relu_kernel():
    node = tensor_node("relu", "relu", {"x": BufferType(F32, ("N", 8))})
    module, name, replication = lowered_module(node)
    return node, compile_kernel_node(module, name, len(replication), {}), replication


def test_replication_follows_the_arguments_shapes():
    node, kernel, replication = relu_kernel()
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    y = np.zeros((5, 8), np.float32)
    kernel.run_replicated({"x": x, "y": y}, replication)
    np.testing.assert_array_equal(y, evaluate_node(node, {"x": x})["y"])


def test_disagreeing_shapes_are_refused():
    _, kernel, replication = relu_kernel()
    with pytest.raises(ExecutionError, match="shape symbol 'N'"):
        kernel.run_replicated({"x": np.zeros((5, 8), np.float32), "y": np.zeros((4, 8), np.float32)},
                              replication)


def test_a_bound_launch_lets_go_of_the_arrays_of_each_launch():
    node, kernel, replication = relu_kernel()
    rng = np.random.default_rng(1)
    bound_x, bound_y = np.zeros((5, 8), np.float32), np.zeros((5, 8), np.float32)
    launch = kernel.bind({"x": bound_x, "y": bound_y}, replication)
    for _ in range(2):
        x = rng.standard_normal((5, 8)).astype(np.float32)
        y = np.zeros((5, 8), np.float32)
        launch({"x": x, "y": y})
        np.testing.assert_array_equal(y, evaluate_node(node, {"x": x})["y"])
        arrays = [weakref.ref(x), weakref.ref(y)]
        del x, y
        assert [a() for a in arrays] == [None, None]  # their memory may serve the next run


def test_a_bound_launch_wants_again_every_array_it_let_go():
    _, kernel, replication = relu_kernel()
    x, y = np.ones((5, 8), np.float32), np.zeros((5, 8), np.float32)
    launch = kernel.bind({"x": x, "y": y}, replication)
    launch({"y": y})
    launch({"y": y})  # x was never changed: the bound array is still held
    with pytest.raises(ExecutionError, match="'y'.*not given this port's value again"):
        launch({"x": x})
