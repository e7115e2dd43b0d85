"""register-tile: loop nests that reuse their reads across instances run
as register tiles over packed panels.  Results equal the program as
written (the interpreter runs both, so the sums are bit-identical) on
sizes that are not multiples of any block, smaller than a tile, with an
empty loop; the cpu target schedules them by default and agrees with
the golden model; nests without reuse are left alone, and named ones
refused with the reason."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.frontend.compile import load_python_file
from hpvm.ir.text import parse_module, print_module
from hpvm.ir.text.printer import print_expr
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.module_tools import iter_nodes
from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE, eligible_nodes
from hpvm.passes.register_tile_plan import NestPlan, adjacent_along, nest_plan
from hpvm.testing import usable_targets

from benchmarks import products as PROGRAMS

CHECKS = load_python_file(Path(__file__).with_name("tiling_checks.py"))
SMALL = "register-tile{rows=3 cols=4 chunk=6 panel=8 kblock=5}"
"""Blocks far smaller than the sizes, so that every ragged edge is met."""
SIZES = [(13, 11, 17), (1, 3, 1), (2, 0, 5), (6, 10, 8), (40, 33, 70)]


_outputs = CHECKS.outputs


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_every_written_form_of_a_product_qualifies(name):
    module = PROGRAMS.TILED[name].build()
    assert len(eligible_nodes(module)) == 1
    tiled = run_pipeline(module, SMALL, verify_each=True)
    text = print_module(tiled)
    assert f"{SCHEDULE_ATTRIBUTE} = [3, 4]" in text
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_panels_are_copied_along_the_contiguous_elements(name):
    """b[j, k] (a linear layer's weights) is packed step by step down each
    column, b[k, j] column by column along each step; a[i, k] is read along
    the steps and at[k, i] along the rows, in flat buffers too
    (b[k * n + j], a[i * k + p])."""
    module = PROGRAMS.TILED[name].build()
    plans = [plan for _, node in iter_nodes(module)
             if isinstance(plan := nest_plan(module, node), NestPlan)]
    transposed = {"matmul_bt": ("steps", "steps"), "matmul_at": ("instances", "instances")}
    assert [(adjacent_along(plan, plan.packed, plan.cols),
             adjacent_along(plan, plan.row_packed, plan.rows)) for plan in plans] == [
        transposed.get(name, ("instances", "steps"))]


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
@pytest.mark.parametrize("pipeline", [SMALL, SMALL.replace("}", " pack=false}")])
def test_results_equal_the_program_as_written_on_ragged_sizes(name, pipeline):
    _check_ragged(name, pipeline, SIZES)


GROUP = "register-tile{form=group rows=3 cols=2 group=4 kblock=5}"
SPLIT = "parallel-reduce{form=split lanes=3 reassociate=true}," + GROUP
"""Split-K, then the partials' node in work groups."""


@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_work_groups_with_local_tiles_give_the_same_results(name):
    """form=group: a micro-tile per instance of padded work groups that
    copy each block of reads into local tiles (one batch a group: batched's
    groups are 1 x 4 x 4)."""
    _check_ragged(name, GROUP, SIZES)
    text = print_module(run_pipeline(PROGRAMS.TILED[name].build(), GROUP))
    assert "padded_groups = true" in text and text.count("barrier") == 2


@pytest.mark.parametrize("target", usable_targets(("gpu_opencl",)))
@pytest.mark.parametrize("name", ["sgemm", "min_plus", "two_sums", "matmul_bt", "batched"])
def test_work_groups_agree_with_the_golden_model_on_opencl(target, name):
    module = PROGRAMS.TILED[name].build()
    rng = np.random.default_rng(3)
    for pipeline in (GROUP, "register-tile{form=group}", SPLIT,
                     SPLIT.replace("lanes=3", "lanes=3 layout=strided")):
        inputs = PROGRAMS.inputs_for(name, rng, 67, 45, 83)
        expected = _outputs(module, inputs)
        got = _outputs(module, inputs, target, {"pipeline": pipeline})
        for port, value in expected.items():
            np.testing.assert_allclose(got[port], value, rtol=1e-4, atol=1e-4, err_msg=port)


@pytest.mark.parametrize("name", ["sgemm", "min_plus", "matmul_at", "matmul_bt", "two_sums",
                                  "int_matmul"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_the_partials_of_a_split_loop_are_copied_into_local_tiles(name, layout):
    """Split-K (parallel-reduce{form=split}): each chunk's ``let k =
    iteration`` is read as its index, and a loop over every third step
    (layout=strided) as one over its steps, so the partial node's reads
    of a row and of a column are still copied into local tiles; the
    folded partials agree with the program as written (min exactly, sums
    to rounding)."""
    module = PROGRAMS.TILED[name].build()
    tiled = run_pipeline(module, SPLIT.replace("lanes=3", f"lanes=3 layout={layout}"),
                         verify_each=True)
    partial = next(tiled.function(node.body.function) for _, node in iter_nodes(tiled)
                   if "partials_of" in node.attributes)
    assert sum(decl.space == "local" for decl in partial.body
               if type(decl).__name__ == "ArrayDecl") == 2
    rng = np.random.default_rng(4)
    for m, k, n in SIZES:
        inputs = PROGRAMS.inputs_for(name, rng, m, k, n)
        expected, got = _outputs(module, inputs), _outputs(tiled, inputs)
        for port, value in expected.items():
            np.testing.assert_allclose(got[port], value, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{port} at {m, k, n}")


def test_a_node_with_a_work_group_already_is_refused_form_group():
    text = print_module(PROGRAMS.TILED["sgemm"].build())
    text = text.replace("@sgemm [M, N]", "@sgemm [M, N] {group = [8, 8]}")
    with pytest.raises(PassError) as error:
        run_pipeline(parse_module(text), "register-tile{form=group nodes=sgemm}")
    assert "has a work-group size already" in str(error.value)
    batched = run_pipeline(PROGRAMS.TILED["batched"].build(), "register-tile{form=group}")
    assert "{group = [1, 16, 16]," in print_module(batched)


@pytest.mark.parametrize("name", ["sgemm", "two_sums"])
def test_the_models_blocks_give_the_same_results(name):
    _check_ragged(name, "register-tile{vector_bits=512 registers=32 cores=2}", SIZES[:2])


def _check_ragged(name, pipeline, sizes):
    module = PROGRAMS.TILED[name].build()
    tiled = run_pipeline(module, pipeline, verify_each=True)
    rng = np.random.default_rng(1)
    for m, k, n in sizes:
        inputs = PROGRAMS.inputs_for(name, rng, m, k if name != "ms_gemm" else m, n)
        expected, got = _outputs(module, inputs), _outputs(tiled, inputs)
        for port, value in expected.items():
            np.testing.assert_array_equal(got[port], value, err_msg=f"{port} at {m, k, n}")


@pytest.mark.parametrize("target", usable_targets(("cpu",)))
@pytest.mark.parametrize("name", sorted(PROGRAMS.TILED))
def test_the_cpu_schedules_products_by_default_and_agrees_with_the_golden_model(target, name):
    rng = np.random.default_rng(2)
    CHECKS.check_scheduled_by_default(PROGRAMS.TILED[name].build(), target, [
        ((m, k, n), PROGRAMS.inputs_for(name, rng, m, k if name != "ms_gemm" else m, n))
        for m, k, n in [(67, 45, 83), (5, 300, 3)]])


@pytest.mark.parametrize("target", usable_targets(("cpu",)))
def test_a_tiled_min_plus_product_skips_nan_as_fmin_does(target):
    """Its tile of minima never holds NaN (hpvm.ir.nan_free), so the cpu
    takes one compare a step; NaN distances still lose to every number,
    and a row and a column of NaN only leave the start value."""
    rng = np.random.default_rng(5)
    inputs = PROGRAMS.inputs_for("min_plus", rng, 37, 29, 41)
    inputs["d"][3, ::2] = inputs["e"][::3, 7] = np.nan
    inputs["d"][5, :] = inputs["e"][:, 9] = np.nan
    CHECKS.check_scheduled_by_default(PROGRAMS.min_plus.build(), target, [("nan", inputs)])
    got = CHECKS.outputs(PROGRAMS.min_plus.build(), inputs, target)["out"]
    assert not np.isnan(got).any() and got[5, 0] == got[0, 9] == np.float32(1e30)


def test_a_nest_without_reuse_is_left_alone_and_a_named_one_refused():
    module = PROGRAMS.UNTILED["row_sums"].build()
    assert eligible_nodes(module) == []
    assert print_module(run_pipeline(module, "register-tile")) == print_module(module)
    with pytest.raises(PassError) as error:
        run_pipeline(module, "register-tile{nodes=rows}")
    message = str(error.value)
    assert "node 'rows'" in message and "reused across instances" in message


def test_a_node_without_a_second_dimension_is_refused_with_the_reason():
    text = """hpvm 1.1
module m

func @scale(in a: f32[N], out b: f32[N]) {
  let i: i64 = instance_id(0)
  let acc: f32 = f32(0.0)
  for k in 0 .. N step 1 {
    acc = acc + a[k]
  }
  b[i] = acc
}

graph @g(in a: f32[N], out b: f32[N]) {
  node scale = @scale [N]
  in a -> scale.a
  out scale.b -> b
}

root @g
"""
    with pytest.raises(PassError) as error:
        run_pipeline(parse_module(text), "register-tile{nodes=scale}")
    assert "1 replication dimension(s)" in str(error.value)


def test_a_scale_times_a_row_read_is_packed_as_its_value():
    """``alpha * a[i, k] * b[k, j]``: the product ``alpha * a[i, k]`` is the
    same along a row of results, so the rows' panel holds it, computed once
    per row and step (PolyBench's gemm at 2048^3 on 2 cores: 101 -> 75 ms);
    the results are the program's, bit for bit."""
    module = PROGRAMS.TILED["scaled_terms"].build()
    (plan,) = [p for _, node in iter_nodes(module)
               if isinstance(p := nest_plan(module, node), NestPlan)]
    assert [print_expr(v) for v in plan.row_values] == ["alpha * a[instance_id(0), k]"]
    text = print_module(run_pipeline(module, SMALL))
    tiled = text[text.index("func @scaled_register_tiled"):text.index("graph @")]
    scaled = [line.strip() for line in tiled.splitlines() if "alpha *" in line]
    assert len(scaled) == 3 and all(line.startswith("row_panel[") for line in scaled)
    _check_ragged("scaled_terms", SMALL, SIZES)


def test_a_column_read_times_a_scale_is_packed_as_its_value():
    """syr2k's ``a[j, k] * alpha * b[i, k] + b[j, k] * alpha * a[i, k]``:
    ``a[j, k] * alpha`` and ``b[j, k] * alpha`` are the same down a column
    of results, so the column panels hold them, computed once per column
    and step (2 -> 1 multiplications a term; 1024^3 on 2 cores, 72 -> 30
    ms); the results are the program's, bit for bit."""
    from benchmarks import polybench
    module = run_pipeline(polybench.FORMS["syr2k"].build(), "loop-instances{reused=true}")
    (plan,) = [p for _, node in iter_nodes(module)
               if isinstance(p := nest_plan(module, node), NestPlan)]
    assert [print_expr(v) for v in plan.col_values] == [
        "A[instance_id(1), k] * alpha", "B[instance_id(1), k] * alpha"]
    text = print_module(run_pipeline(module, SMALL))
    tiled = text[text.index("func @syr2k_instances_register_tiled"):text.index("graph @")]
    scaled = [line.strip() for line in tiled.splitlines() if "* alpha" in line]
    assert len(scaled) == 4 and all(line.startswith("panel") for line in scaled)
    inputs = polybench.inputs_for("syr2k", np.random.default_rng(6), 19, 0)
    expected = _outputs(polybench.FORMS["syr2k"].build(), inputs)
    np.testing.assert_array_equal(_outputs(run_pipeline(module, SMALL), inputs)["C"],
                                  expected["C"])


@pytest.mark.parametrize("name, sizes", [("syrk", (13, 11)), ("syrk", (40, 33)),
                                         ("covariance", (21, 17))])
def test_a_triangle_over_its_box_skips_blocks_that_store_nothing(name, sizes):
    """A triangle run over the box around it (loop-instances,
    triangle_boxes.py) stores under a guard linear in the rows and
    columns: a block whose four corners all fail it is skipped whole,
    and the results are those of the program as written."""
    from benchmarks import polybench
    module = polybench.FORMS[name].build()
    boxed = run_pipeline(module, "task-split,loop-instances{reused=true}")
    tiled = run_pipeline(boxed, SMALL, verify_each=True)
    text = print_module(tiled)
    body = text[text.index("_register_tiled("):]
    assert " || " in body[:body.index("for ")], "no test of the block's corners"
    inputs = polybench.inputs_for(name, np.random.default_rng(5), *sizes)
    expected, got = _outputs(module, inputs), _outputs(tiled, inputs)
    for port, value in expected.items():
        np.testing.assert_array_equal(got[port], value, err_msg=port)
