"""Broadcasting elementwise ops and transposes lowered over runs of the
result's axes (lowering.broadcast_runs, KernelBuilder.grid): no instance
divides its index where the runs fit a replication, the outermost runs
share one replication dimension where they do not, small results run
over one dimension (GRID_ELEMENTS), and every layout
computes what numpy does (the interpreter runs the lowered kernels)."""
import numpy as np
import pytest

from hpvm.interp import run_module
from hpvm.ir.kernel import Binary, InstanceId, Let, Var
from hpvm.ir.tensor_ops.lowering import broadcast_runs, run_strides, size
from hpvm.ir.tensor_ops.testing import lowered_module, single_op_module
from hpvm.ir.visit import walk


def divided(module, name) -> set:
    """The instance dimensions whose index the kernel divides."""
    body = module.function(name).body
    ids = {n.name: n.value.dim for n in walk(body)
           if isinstance(n, Let) and isinstance(n.value, InstanceId)}
    return {ids[v.name] for n in walk(body) if isinstance(n, Binary) and n.op in ("div", "rem")
            for v in walk(n) if isinstance(v, Var) and v.name in ids}


def test_runs_group_the_axes_along_which_the_same_ports_broadcast():
    dims = lambda *shape: [size(d) for d in shape]  # noqa: E731
    runs = broadcast_runs(dims(8, 128, 3072), {"a": dims(8, 128, 3072), "b": dims(3072)})
    assert [(set(skip), extent.value) for skip, extent in runs] == [({"b"}, 1024), (set(), 3072)]
    runs = broadcast_runs(dims(4, 1, 5, 6), {"a": dims(4, 1, 1, 6), "b": dims(5, 1)})
    assert [(set(skip), extent.value) for skip, extent in runs] == [
        ({"b"}, 4), ({"a"}, 5), ({"b"}, 6)]
    assert [s if s is None else s.value for s in run_strides(
        [size(4), size(5), size(6)], [True, False, True])] == [6, None, 1]


def op_node(op, inputs, attrs=None):
    module = single_op_module(op, inputs, attrs)
    return module.graph("main").node("op")


@pytest.mark.parametrize("a_shape, b_shape", [
    ((8, 16, 40), (40,)), ((8, 16, 40), (1,)), ((8, 16, 40), ()), ((3, 1, 5), (4, 1)),
    ((2, 3, 4, 5, 6), (3, 1, 5, 1)), ((5, 1), (1, 7)), ((6,), (6,)),
    ((64, 8, 80), (80,)), ((64, 8, 80), (1,)), ((4, 6, 8, 10, 20), (6, 1, 10, 1))])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_broadcasting_ops_compute_what_numpy_does(op, a_shape, b_shape):
    rng = np.random.default_rng(0)
    inputs = {"a": rng.standard_normal(a_shape).astype(np.float32),
              "b": rng.standard_normal(b_shape).astype(np.float32)}
    got = run_module(single_op_module(op, inputs), inputs)["y"]
    want = np.add(*inputs.values()) if op == "add" else np.multiply(*inputs.values())
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_bias_add_runs_rows_by_columns_and_divides_nothing():
    rng = np.random.default_rng(1)
    node = op_node("add", {"a": rng.standard_normal((8, 16, 400)).astype(np.float32),
                           "b": rng.standard_normal((400,)).astype(np.float32)})
    module, name, replication = lowered_module(node)
    assert [r.value for r in replication] == [128, 400]
    assert divided(module, name) == set()


def test_more_runs_than_dimensions_share_the_first():
    rng = np.random.default_rng(2)
    node = op_node("add", {"a": rng.standard_normal((4, 6, 8, 10, 20)).astype(np.float32),
                           "b": rng.standard_normal((6, 1, 10, 1)).astype(np.float32)})
    _, _, replication = lowered_module(node)
    assert [r.value for r in replication] == [4 * 6 * 8, 10, 20]


def test_small_results_run_over_one_dimension():
    rng = np.random.default_rng(4)
    node = op_node("add", {"a": rng.standard_normal((8, 16, 40)).astype(np.float32),
                           "b": rng.standard_normal((40,)).astype(np.float32)})
    assert [r.value for r in lowered_module(node)[2]] == [8 * 16 * 40]


@pytest.mark.parametrize("shape, perm", [
    ((8, 12, 16, 4), (0, 2, 1, 3)), ((8, 12, 16, 4), (0, 2, 3, 1)),
    ((3, 1, 5, 7, 2), (4, 1, 0, 3, 2)),
    ((6, 4), (1, 0)), ((2, 3, 4), (0, 1, 2)), ((2, 3, 4, 5, 6), (1, 0, 3, 2, 4)),
    ((16, 32, 12, 8), (0, 2, 1, 3)), ((16, 32, 12, 8), (3, 1, 2, 0))])
def test_transposes_compute_what_numpy_does(shape, perm):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = run_module(single_op_module("transpose", {"x": x}, {"perm": perm}), {"x": x})["y"]
    np.testing.assert_array_equal(got, np.transpose(x, perm))


def test_a_transpose_of_heads_divides_only_the_outermost_index():
    x = np.zeros((8, 128, 12, 64), np.float32)  # (batch, sequence, head, feature)
    module, name, replication = lowered_module(op_node("transpose", {"x": x},
                                                       {"perm": (0, 2, 1, 3)}))
    assert [r.value for r in replication] == [8 * 12, 128, 64]  # rows of 64 kept whole
    assert divided(module, name) == {0}
