"""register-tile{form=group fill=N}: a launch that would make fewer than N
work groups runs smaller micro-tiles.  The node becomes one node per
schedule, and exactly one of them has instances at any sizes: the first
schedule whose groups number at least N, else the smallest.  Results
equal the program as written whichever runs, for every written form of
a product (outputs written only, updated in place, two of them, a batch
dimension); constant sizes leave one node; OpenCL agrees with the golden
model."""
import numpy as np
import pytest

import hpvm.lang as hl
from hpvm.ir.shapes import replication_sizes
from hpvm.lang import Buffer, Out, f32, parallel_loop
from hpvm.passes import run_pipeline
from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE
from hpvm.runtime.compiler import as_module
from hpvm.testing import usable_targets

from benchmarks import products as PROGRAMS

FILLED = "register-tile{form=group rows=8 cols=4 group=16 kblock=16 fill=%d}"
M, K, N = 40, 9, 70
GROUPS = {(8, 4): 2, (4, 4): 6, (2, 2): 15}
"""Micro-tile -> its work groups at M x N: 8 x 4 results in 16 x 16
groups make 1 x 2 groups, 4 x 4 in 8 x 8 make 2 x 3, and 2 x 2 in 8 x 8 3 x 5
(each times the batch)."""
FILLS = (1, 2, 3, 7, 16, 1000)


def _chosen(fill, batch=1):
    """The micro-tile that runs at M x N with ``fill``."""
    return next((tile for tile, groups in GROUPS.items() if groups * batch >= fill), (2, 2))


def _running(module, symbols):
    """(rows, cols) of each node with instances at ``symbols``."""
    graph = module.graph(module.root)
    return [node.attributes[SCHEDULE_ATTRIBUTE] for node in graph.nodes
            if np.prod(replication_sizes(node.replication, symbols)) > 0]


def _outputs(module, inputs, target="interp", options=None):
    import hpvm
    return hpvm.compile(module, targets=[target], options=options or {})(
        **{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()})


@pytest.mark.parametrize("name", ["sgemm", "matmul_bt", "batched", "two_sums", "min_plus"])
def test_one_schedule_runs_and_the_results_are_those_as_written(name):
    module = PROGRAMS.TILED[name].build()
    rng = np.random.default_rng(2)
    inputs = PROGRAMS.inputs_for(name, rng, M, K, N)
    expected = _outputs(module, inputs)
    batch = 3 if name == "batched" else 1
    for fill in FILLS:
        filled = run_pipeline(module, FILLED % fill, verify_each=True)
        assert len(filled.graph(filled.root).nodes) == 3
        assert _running(filled, {"M": M, "K": K, "N": N, "B": batch}) == [_chosen(fill, batch)]
        got = _outputs(filled, inputs)
        for port, value in expected.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{port}, fill={fill}")


def test_the_given_schedule_keeps_the_name_and_runs_last():
    filled = run_pipeline(PROGRAMS.TILED["sgemm"].build(), FILLED % 100)
    nodes = filled.graph(filled.root).nodes
    assert [n.name for n in nodes] == ["sgemm_2x2", "sgemm_4x4", "sgemm"]
    assert [n.attributes["group"] for n in nodes] == [(8, 8), (8, 8), (16, 16)]
    larger = run_pipeline(PROGRAMS.TILED["sgemm"].build(),
                          "register-tile{form=group rows=8 cols=8 fill=100}")
    assert [n.attributes[SCHEDULE_ATTRIBUTE] for n in larger.graph(larger.root).nodes] == [
        (2, 2), (4, 4), (8, 4), (8, 8)]


@hl.program
def fixed(a: Buffer[f32, 256, 64], b: Buffer[f32, 64, 256], c: Out[Buffer[f32, 256, 256]]):
    for i, j in parallel_loop(256, 256, ins=(a, b), outs=(c,), name="product"):
        total: f32 = 0.0
        for k in range(64):
            total += a[i, k] * b[k, j]
        c[i, j] = total


@pytest.mark.parametrize("fill, tile", [(4, (8, 4)), (32, (4, 4)), (4096, (2, 2))])
def test_constant_sizes_leave_the_chosen_schedule_alone(fill, tile):
    """256 x 256 results: 8 x 4 tiles make 2 x 4 groups, 4 x 4 in 8 x 8
    groups 8 x 8."""
    filled = run_pipeline(as_module(fixed), FILLED % fill, verify_each=True)
    (node,) = filled.graph(filled.root).nodes
    assert node.name == "product" and node.attributes[SCHEDULE_ATTRIBUTE] == tile


def test_a_fill_smaller_than_the_given_groups_changes_nothing_but_the_nodes_count():
    """A group of 3 x 2 results in 4 x 4 groups is smaller than any of the
    ladder's: the given schedule alone."""
    filled = run_pipeline(PROGRAMS.TILED["sgemm"].build(),
                          "register-tile{form=group rows=3 cols=2 group=4 fill=1000}")
    assert [n.name for n in filled.graph(filled.root).nodes] == ["sgemm"]


@pytest.mark.parametrize("target", usable_targets(("gpu_opencl",)))
@pytest.mark.parametrize("name", ["sgemm", "two_sums", "batched"])
def test_every_schedule_agrees_with_the_golden_model_on_opencl(target, name):
    module = PROGRAMS.TILED[name].build()
    inputs = PROGRAMS.inputs_for(name, np.random.default_rng(5), M, K, N)
    expected = _outputs(module, inputs)
    for fill in (1, 3, 1000):
        got = _outputs(module, inputs, target, {"pipeline": FILLED % fill})
        for port, value in expected.items():
            np.testing.assert_allclose(got[port], value, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{port}, fill={fill}")


@pytest.mark.parametrize("target", usable_targets(("gpu_opencl",)))
def test_one_executable_runs_the_schedule_each_size_chooses(target):
    import hpvm
    module = PROGRAMS.TILED["sgemm"].build()
    exe = hpvm.compile(module, [target], {"pipeline": FILLED % 7})
    rng = np.random.default_rng(6)
    for (m, k, n), tile in (((40, 9, 70), "sgemm_2x2"), ((200, 5, 200), "sgemm"),
                            ((40, 9, 70), "sgemm_2x2"), ((70, 3, 90), "sgemm_4x4")):
        inputs = PROGRAMS.inputs_for("sgemm", rng, m, k, n)
        got = exe(**{name: v.copy() if isinstance(v, np.ndarray) else v
                     for name, v in inputs.items()})
        np.testing.assert_allclose(got["C"], _outputs(module, inputs)["C"], rtol=1e-4, atol=1e-4)
        assert [r.node for r in exe.report().node_records if r.seconds > 0] == [tile]
