# ruff: noqa: F821  (shape symbols such as N are names the kernel language binds)
"""task-split: a task running several loops in turn becomes a chain of
nodes, one per loop, computing what the task did bit for bit (the golden
model runs both; every usable target runs the split program close to
it); values a later loop reads are computed again where they can be, the
loops stay together where they cannot; tasks with nothing to gain, or
that cannot be split, are left, and refused with the reason when named."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.text import print_module
from hpvm.lang import Buffer, InOut, Out, f32, task
from hpvm.passes import PassError, run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

from benchmarks import polybench

from .test_polybench_pipelines import computes_the_same


@hl.program
def stages(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], z: Out[Buffer[f32, "N"]],
           w: InOut[Buffer[f32, "N"]]):
    with task(ins=(x, w), outs=(y, z, w), name="stages"):
        scale = x[0] * 2.0 + 1.0
        for i in range(N):
            y[i] = x[i] * scale
        for i in range(N):
            z[i] = y[i] + scale
            y[i] = y[i] * 0.5
        first = y[0]
        for i in range(N):
            w[i] = w[i] + z[i] * first


@hl.program
def chained(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], total: Out[Buffer[f32, 1]]):
    with task(ins=(x,), outs=(y, total), name="normalise"):
        acc = 0.0
        for i in range(N):
            acc += x[i]
        for i in range(N):
            y[i] = x[i] / acc
        total[0] = acc


@hl.program
def merged(x: Buffer[f32, "N"], y: Out[Buffer[f32, "N"]], z: Out[Buffer[f32, "N"]]):
    with task(ins=(x,), outs=(y, z), name="merged"):
        scale = x[0] * 2.0
        for i in range(N):
            y[i] = x[i] * scale
        acc = 0.0
        for i in range(N):
            acc += y[i]
        for i in range(N):
            z[i] = y[i] * acc + scale


def check(program, inputs, pipeline="task-split"):
    module = program.build()
    split = run_pipeline(module, pipeline, verify_each=True)
    want = Interpreter(module).run(**{k: np.copy(v) for k, v in inputs.items()})
    got = Interpreter(split).run(**{k: np.copy(v) for k, v in inputs.items()})
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    for target in usable_targets(("cpu", "gpu_opencl")):
        exe = hpvm.compile(split, [target])
        assert_outputs_close(exe(**{k: np.copy(v) for k, v in inputs.items()}), want,
                             1e-5, 1e-5, target)
    return print_module(split)


def test_each_loop_becomes_a_node_fed_by_the_last_writer_of_what_it_reads():
    rng = np.random.default_rng(0)
    for n in (1, 7, 40):
        x, w = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
        text = check(stages, {"x": x, "w": w})
    assert "node stages_0 = @stages_0\n  node stages_1 = @stages_1\n  node stages_2 = @stages_2" \
        in text
    # the value before the first loop is computed again in the second, which
    # updates y after the first made it; the third reads y through `first`
    assert "func @stages_1(in x: f32[N], inout y: f32[N], out z: f32[N])" in text
    assert "func @stages_2(inout w: f32[N], in y: f32[N], in z: f32[N])" in text
    for edge in ("stages_0.y -> stages_1.y", "stages_1.y -> stages_2.y",
                 "stages_1.z -> stages_2.z", "out stages_1.y -> y", "out stages_2.w -> w"):
        assert edge in text


def test_a_product_ported_from_c_runs_as_two_nodes_of_instances():
    """PolyBench's 2mm: tmp = alpha A B, then D = tmp C + beta D, one task;
    split, each product is a node of two dimensions (loop-instances)."""
    rng = np.random.default_rng(1)
    inputs = polybench.inputs_for("two_mm", rng, 13, 13)
    text = check(polybench.two_mm, inputs, "task-split,loop-instances{reused=true}")
    assert "node two_mm_0 = @two_mm_0_instances [max(N, 0), max(N, 0)]" in text
    assert "edge two_mm_0.tmp -> two_mm_1.tmp" in text


def test_a_zeroing_loop_gets_an_input_giving_its_size():
    inputs = polybench.inputs_for("atax", np.random.default_rng(2), 9, 9)
    text = check(polybench.atax, inputs)
    assert "func @atax_0(in x: f32[N], out y: f32[N])" in text


def test_loops_sharing_a_variable_stay_together():
    """The sum `acc` the first loop folds is read by the second: one task."""
    module = chained.build()
    assert run_pipeline(module, "task-split") == module
    with pytest.raises(PassError, match="has no two loops that can run apart"):
        run_pipeline(module, "task-split{nodes=normalise}")


TASK = """hpvm 1.0
module m

func @k(in x: f32[N], out y: f32[N], out z: f32[N]) {
  for i in 1 .. N step 1 {
    FIRST
  }
  for i in 1 .. N step 1 {
    SECOND
  }
}

graph @main(in x: f32[N], out y: f32[N], out z: f32[N]) {
  node t = @k
  in x -> t.x
  out t.y -> y
  out t.z -> z
}

root @main
"""


@pytest.mark.parametrize("first, second, reason", [
    ("z[i] = x[i]", "z[i] = z[i] + x[i]", "has an output 'y' that no statement writes"),
    ("y[i] = y[i - 1] + x[i]", "z[i] = z[i - 1] + y[i]",    # running sums
     "has no loop that could then run as instances"),
    ("z[i] = y[i] + x[i]", "y[i] = x[i]", "reads its output 'y' before a loop writes it"),
])
def test_tasks_that_cannot_be_split_or_gain_nothing_are_refused_with_the_reason(
        first, second, reason):
    from hpvm.ir.text import parse_module
    module = parse_module(TASK.replace("FIRST", first).replace("SECOND", second))
    assert run_pipeline(module, "task-split") == module
    with pytest.raises(PassError, match=reason):
        run_pipeline(module, "task-split{nodes=t}")


DISTRIBUTED = """hpvm 1.0
module m

func @k(in x: f32[N], inout y: f32[N], out z: f32[N]) {
  for i in 0 .. N step 1 {
    z[i] = f32(0.0)
    for j in 0 .. N step 1 {
      z[i] = z[i] + x[j] * x[i]
    }
    for j in 0 .. N step 1 {
      y[j] = y[j] + x[j] * READ
    }
  }
}

graph @main(in x: f32[N], inout y: f32[N], out z: f32[N]) {
  node t = @k
  in x -> t.x
  in y -> t.y
  out t.y -> y
  out t.z -> z
}

root @main
"""


def test_a_loop_doing_two_things_in_turn_runs_each_for_every_iteration_first():
    """atax's form: each row's sum, then the row added into y with it. The
    sums run apart as instances, then the additions in their order, in
    strips of y (strip_instances.py)."""
    from hpvm.ir.text import parse_module
    module = parse_module(DISTRIBUTED.replace("READ", "z[i]"))
    split = run_pipeline(module, "task-split,loop-instances{cores=2}", verify_each=True)
    text = print_module(split)
    assert "node t_0 = @k_0_instances [max(N, 0)]\n  node t_1 = @k_1_instances [max((N + " \
        in text
    rng = np.random.default_rng(5)
    for n in (1, 6, 33):
        data = {"x": rng.standard_normal(n).astype(np.float32),
                "y": rng.standard_normal(n).astype(np.float32)}
        want = Interpreter(module).run(**{k: np.copy(v) for k, v in data.items()})
        got = Interpreter(split).run(**{k: np.copy(v) for k, v in data.items()})
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_loop_whose_second_part_reads_what_a_later_iteration_writes_stays_whole():
    """y adds z[N - 1], which the last iteration's sum writes: every
    addition before it reads the element as it was."""
    from hpvm.ir.text import parse_module
    module = parse_module(DISTRIBUTED.replace("READ", "z[N - 1]"))
    assert run_pipeline(module, "task-split") == module


def test_loops_kept_together_compute_again_the_values_each_reads():
    """The sum's loop and the loop reading the sum stay one node, which
    computes `scale` again for the second of them."""
    rng = np.random.default_rng(6)
    for n in (1, 9):
        text = check(merged, {"x": rng.standard_normal(n).astype(np.float32)})
    assert "node merged_0 = @merged_0\n  node merged_1 = @merged_1\n" in text
    second = text[text.index("func @merged_1"):text.index("graph @")]
    assert "let scale: f32 = x[0] * f32(2.0)" in second


def test_a_loop_adding_into_a_row_and_a_column_at_each_step_is_cut_between_them():
    """PolyBench's bicg: each step adds into s[j] (down the columns) and
    q[i] (along the row); cut between the two, the q sums run as
    instances of the rows, the s sums in their order."""
    inputs = polybench.inputs_for("bicg", np.random.default_rng(7), 0, 11)
    text = check(polybench.bicg, inputs, "task-split,loop-instances")
    assert "node bicg_1 = @bicg_1\n  node bicg_2 = @bicg_2_instances [max(N, 0)]" in text


def test_statements_reading_what_another_step_wrote_stay_in_one_loop():
    from hpvm.ir.text import parse_module
    source = print_module(polybench.bicg.build())
    written = "q[i_1] = q[i_1] + A[i_1, j] * p[j]"
    assert written in source
    module = parse_module(source.replace(written, "q[i_1] = q[i_1] + A[i_1, j] * s[0]"))
    text = print_module(run_pipeline(module, "task-split"))
    assert "bicg_2" not in text and "      s[j] = s[j] + r[i_1] * A[i_1, j]\n      q[i_1]" in text


def test_a_row_set_apart_from_its_product_and_a_last_statement_run_as_their_own_nodes():
    """PolyBench's correlation sets ``corr[i, i] = 1`` before the loop over
    the row's other columns, and ``corr[M - 1, M - 1]`` after the rows: the
    row loop is cut between the two, so that the triangle of sums runs as
    instances of its rows and columns (loop-instances' reused), and the
    last statement is a node of its own rather than keep the rows whole."""
    inputs = polybench.inputs_for("correlation", np.random.default_rng(8), 12, 12)
    text = check(polybench.FORMS["correlation"], inputs,
                 "task-split,loop-instances{reused=true},loop-instances")
    assert "node correlation_3 = @correlation_3_instances [max(M - 1, 0)]" in text
    assert "node correlation_4 = @correlation_4_instances [max(M - 1, 0), max(M - 1, 0)]" \
        in text
    assert "func @correlation_5(inout corr: f32[M, M]) {\n  corr[M - 1, M - 1] = f32(1.0)" \
        in text


def test_a_loop_that_runs_as_instances_whole_is_not_cut():
    """atax's row sums start at ``tmp[i] = 0`` before their loop: the rows
    run as instances as they are, so the start stays with its sum."""
    text = print_module(run_pipeline(polybench.atax.build(), "task-split"))
    assert "tmp[i_1] = f32(0.0)\n    for j in 0 .. N step 1 {" in text


def test_with_cores_a_row_start_is_cut_from_additions_that_then_run_in_strips():
    """bicg's rows start q[i] and add the row into every s[j]: given the
    cores, the starts run apart and the additions in strips of s."""
    from benchmarks import polybench
    module = polybench.FORMS["bicg"].build()
    split = run_pipeline(module, "task-split{cores=2},loop-instances{cores=2},dce",
                         verify_each=True)
    text = print_module(split)
    assert "q[i_1] = f32(0.0)\n}" in text and "j_2_strip" in text
    assert "_strip" not in print_module(run_pipeline(module, "task-split,loop-instances,dce"))
    computes_the_same("bicg", module, split, ((3, 3), (20, 20)))
