"""parallel-reduce{form=split}: the reduction loops of a replicated node
folded in chunks by a producer whose lanes are one more replication
dimension just outside the node's innermost, then by the node; results
equal the interpreter's on every usable target (exactly for max), and
nodes it cannot take are refused with the reason."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.demo.edge_detection import edge_detect, make_inputs, reference
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.lang import Buffer, Out, f32, i64, parallel_loop, reduce
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.parallel_reduce import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets


BLOCKS = 3


@hl.program
def column_sums(a: Buffer[f32, "K", "C"], sums: Out[Buffer[f32, BLOCKS, "C"]]):
    for block, c in parallel_loop(BLOCKS, C, ins=(a,), outs=(sums,), name="columns"):
        rows = (K + BLOCKS - 1) // BLOCKS
        first = block * rows
        sums[block, c] = reduce("+", (a[k, c] for k in range(first, min(first + rows, K))))


def test_a_column_sum_takes_its_lanes_outside_the_columns():
    module = column_sums.build()
    result = run_pipeline(module, "parallel-reduce{form=split lanes=8 layout=strided}",
                          verify_each=True)
    text = print_module(result)
    assert "node columns_partial = @columns_partial [3, 8, C]" in text
    assert "node columns = @columns_combine [3, C]" in text
    assert "out reduced_partials: f32[3, 8, C]" in text
    inputs = {"a": np.random.default_rng(0).standard_normal((203, 5)).astype(np.float32)}
    expected = Interpreter(module).run(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 1e-5, 1e-5,
                             target)


def test_no_later_parallel_reduce_spreads_the_short_folds_again():
    """gpu_opencl's default pipeline runs chunks, then a tree on every
    node left: the split node's fold of its lanes' results is 8 long."""
    split = run_pipeline(column_sums.build(), "parallel-reduce{form=split lanes=8}")
    assert 'node columns = @columns_combine [3, C] {split = 8}' in print_module(split)
    assert run_pipeline(split, "parallel-reduce{form=chunks lanes=64},parallel-reduce") == split
    with pytest.raises(PassError, match="already folds the partial results of 8 lanes"):
        run_pipeline(split, "parallel-reduce{form=split nodes=columns}")


def test_a_max_over_rows_is_exact_on_every_target():
    module = run_pipeline(edge_detect.build(), "parallel-reduce{form=split lanes=4 "
                                               "nodes=row_max}", verify_each=True)
    assert "@row_max_partial [4, H]" in print_module(module)
    inputs = make_inputs(np.random.default_rng(1))
    for target in usable_targets():
        np.testing.assert_array_equal(hpvm.compile(module, [target])(**inputs)["edges"],
                                      reference(inputs)["edges"], err_msg=target)


def test_the_chunks_follow_the_sizes_with_a_grain():
    """Where the trip count is a size (a row of W pixels), as many chunks
    as give each 16 iterations, at most 64; where it depends on the
    instance (the column sums' blocks), all 64."""
    module = run_pipeline(edge_detect.build(), "parallel-reduce{form=split lanes=64 grain=16 "
                                               "nodes=row_max}", verify_each=True)
    assert "@row_max_partial [min(max((max(W, 0) + 15) / 16, 1), 64), H]" in print_module(module)
    inputs = make_inputs(np.random.default_rng(2))
    np.testing.assert_array_equal(Interpreter(module).run(**inputs)["edges"],
                                  reference(inputs)["edges"])
    blocks = run_pipeline(column_sums.build(), "parallel-reduce{form=split lanes=64 grain=16}")
    assert "@columns_partial [3, 64, C]" in print_module(blocks)


@hl.program
def weighted(x: Buffer[f32, "N"], y: Out[Buffer[f32, "R"]], R: i64):
    for r in parallel_loop(R, ins=(x,), outs=(y,), name="weights"):
        y[r] = reduce("+", (x[k] * f32(r + 1) for k in range(N)))


def test_a_size_that_only_a_scalar_gives_reaches_the_partial_results():
    module = weighted.build()
    result = run_pipeline(module, "parallel-reduce{form=split lanes=4}", verify_each=True)
    assert "in R: i64, out reduced_partials: f32[4, R]" in print_module(result)
    inputs = {"x": np.linspace(-1, 1, 37, dtype=np.float32), "R": 5}
    expected = Interpreter(module).run(**inputs)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(result, [target])(**inputs), expected, 1e-5, 1e-5,
                             target)


PROGRAM = """hpvm 1.1
module t

func @one(in a: f32[N], out total: f32[1]) {
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i]
  }
  total[0] = acc
}

func @shifted(in a: f32[N], out totals: f32[N]) {
  let j: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i] * f32(j)
  }
  totals[j] = acc
}

func @cube(in a: f32[N], out totals: f32[2, 2, 2]) {
  let acc: f32 = f32(0.0)
  for i in 0 .. N step 1 [reduce acc: add] {
    acc = acc + a[i]
  }
  totals[instance_id(0), instance_id(1), instance_id(2)] = acc
}

graph @main(in a: f32[N], out total: f32[1], out totals: f32[N], out t3: f32[2, 2, 2]) {
  node one = @one
  node shifted = @shifted [N - 1]
  node cube = @cube [2, 2, 2]
  in a -> one.a
  in a -> shifted.a
  in a -> cube.a
  out one.total -> total
  out shifted.totals -> totals
  out cube.totals -> t3
}

root @main
"""


@pytest.mark.parametrize("node, reason", [
    ("one", "has no replication \\(split is for replicated nodes, chunks for one instance\\)"),
    ("shifted", "neither a constant nor a size of its kernel's inputs \\(N - 1\\)"),
    ("cube", "already has 3 replication dimensions"),
])
def test_nodes_it_cannot_take_are_refused_with_the_reason(node, reason):
    with pytest.raises(PassError, match=reason):
        run_pipeline(parse_module(PROGRAM), f"parallel-reduce{{form=split nodes={node}}}")
    assert eligible_nodes(parse_module(PROGRAM), "split") == []


def test_without_a_name_split_leaves_every_node_it_cannot_take():
    module = parse_module(PROGRAM)
    assert run_pipeline(module, "parallel-reduce{form=split}") == module
