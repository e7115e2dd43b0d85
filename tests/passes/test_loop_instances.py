"""loop-instances: a task that is one loop over independent iterations
becomes a node of as many instances (bit for bit in the golden model,
close on every usable target); tasks whose iterations share what they
write, whose loops the graph cannot size, or with more than values and
one loop are left, and refused with the reason when named."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.text import print_module
from hpvm.lang import Buffer, InOut, Out, f32, parallel_loop, task
from hpvm.passes import PassError, run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

from benchmarks.reductions import FORMS, inputs_for, reference

from .test_polybench_pipelines import computes_the_same


@hl.program
def scaled(a: Buffer[f32, "M", "K"], s: Buffer[f32, 2], out: Out[Buffer[f32, "M", "K"]],
           shifted: Out[Buffer[f32, "M"]]):
    with task(ins=(a, s), outs=(out,), name="rows"):
        scale = s[0] * 2.0
        for i in range(1, M):
            for k in range(K):
                out[i, k] = a[i, k] * scale + a[i - 1, k]
    with task(ins=(a,), outs=(shifted,), name="prefix"):
        shifted[0] = a[0, 0]
        for i in range(1, M):
            shifted[i] = shifted[i - 1] + a[i, 0]


@hl.program
def sized(a: Buffer[f32, "M", "K"], out: Out[Buffer[f32, "M"]], late: Out[Buffer[f32, "M"]],
          stepped: Out[Buffer[f32, "M"]], each: Out[Buffer[f32, "M"]]):
    with task(ins=(a,), outs=(out,), name="bounded"):
        rows = M - 1
        for i in range(rows):
            out[i] = a[i, 0]
    with task(ins=(a,), outs=(late,), name="after"):
        for i in range(M):
            late[i] = a[i, 0]
        late[0] = 1.0
    with task(ins=(a,), outs=(stepped,), name="stepped"):
        for i in range(0, M, 2):
            stepped[i] = a[i, 0]
    for i in parallel_loop(M, ins=(a,), outs=(each,), name="each"):
        each[i] = a[i, 1]


def test_a_product_written_as_one_task_runs_its_rows_as_instances():
    program = FORMS["matvec_loops"]
    module = run_pipeline(program.build(), "loop-instances", verify_each=True)
    assert "node matvec_loops = @matvec_loops_instances [max(M, 0)]" in print_module(module)
    data = inputs_for("matvec_loops", np.random.default_rng(1), 37, 45)
    np.testing.assert_array_equal(Interpreter(module).run(**data)["out"],
                                  Interpreter(program.build()).run(**data)["out"])
    for target in usable_targets(("cpu", "gpu_opencl")):
        exe = hpvm.compile(module, [target])
        assert set(exe.placement.targets.values()) == {target}
        assert_outputs_close(exe(**data), {"out": reference("matvec_loops", data)}, 1e-4, 1e-4,
                             target)


def test_values_before_the_loop_are_computed_by_every_instance():
    """``rows`` reads the row before it (read only: no iteration writes a);
    ``prefix`` reads what the iteration before wrote, and stays a task."""
    module = scaled.build()
    changed = run_pipeline(module, "loop-instances", verify_each=True)
    text = print_module(changed)
    assert "node rows = @rows_instances [max(M - 1, 0)]" in text
    assert "node prefix = @prefix\n" in text
    data = {"a": np.random.default_rng(2).standard_normal((9, 5)).astype(np.float32),
            "s": np.array([1.5, 0.0], np.float32)}
    want = Interpreter(module).run(**data)
    for name, value in Interpreter(changed).run(**data).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)


@pytest.mark.parametrize("program, node, reason", [
    (scaled, "prefix", "has a body other than values and then one loop"),
    (sized, "bounded", "bounds are more than arithmetic, min and max of constants, sizes"),
    (sized, "after", "has a body other than values and then one loop"),
    (sized, "stepped", "steps by other than 1"),
    (sized, "each", "is replicated already"),
])
def test_tasks_that_cannot_run_as_instances_are_refused_with_the_reason(program, node, reason):
    with pytest.raises(PassError, match=reason):
        run_pipeline(program.build(), f"loop-instances{{nodes={node}}}")


def test_a_loop_whose_iterations_share_an_element_stays_a_task():
    source = print_module(FORMS["matvec_loops"].build())
    from hpvm.ir.text import parse_module
    shared = parse_module(source.replace("out[i] = acc", "out[0] = acc"))
    assert run_pipeline(shared, "loop-instances") == shared
    with pytest.raises(PassError, match="iterations that may share"):
        run_pipeline(shared, "loop-instances{nodes=matvec_loops}")


@hl.program
def nests(a: Buffer[f32, "M", "K"], b: Buffer[f32, "K", "N"], c: InOut[Buffer[f32, "M", "N"]],
          s: f32, lower: Out[Buffer[f32, "M", "M"]], twice: Out[Buffer[f32, "M", "K"]],
          totals: InOut[Buffer[f32, "M"]]):
    with task(ins=(a, b, c), outs=(c,), name="product"):     # PolyBench 3.2's gemm
        for i in range(M):
            for j in range(N):
                c[i, j] *= s
                for k in range(K):
                    c[i, j] += a[i, k] * b[k, j]
    with task(ins=(a,), outs=(lower,), name="triangle"):
        for i in range(M):
            for j in range(i):
                acc: f32 = 0.0
                for k in range(K):
                    acc += a[i, k] * a[j, k]
                lower[i, j] = acc
    with task(ins=(a,), outs=(twice,), name="doubled"):
        for i in range(M):
            for j in range(K):
                twice[i, j] = a[i, j] * 2.0
    with task(ins=(a, b, totals), outs=(totals,), name="totals"):
        for i in range(M):
            for j in range(N):
                for k in range(K):
                    totals[i] += a[i, k] * b[k, j]


def nests_inputs(m=9, k=7, n=11, seed=3):
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((m, k)).astype(np.float32),
            "b": rng.standard_normal((k, n)).astype(np.float32),
            "c": rng.standard_normal((m, n)).astype(np.float32), "s": np.float32(1.5),
            "totals": rng.standard_normal(m).astype(np.float32)}


def test_two_loops_reading_values_reused_across_both_run_as_two_dimensions():
    """The product's rows and columns become instances, its sum kept in a
    variable; so does the triangle (the columns' bounds follow the row)
    over the box around it, its stores kept to the triangle
    (triangle_boxes.py); the doubling (nothing reused) stays a task."""
    module = nests.build()
    changed = run_pipeline(module, "loop-instances{reused=true}", verify_each=True)
    text = print_module(changed)
    assert "node product = @product_instances [max(M, 0), max(N, 0)]" in text
    assert """  let i: i64 = instance_id(0)
  let j: i64 = instance_id(1)
  let c_element: f32 = c[i, j] * s
  for k in 0 .. K step 1 {
    c_element = c_element + a[i, k] * b[k, j]
  }
  c[i, j] = c_element""" in text
    assert "node triangle = @triangle_instances [max(M, 0), max(M - 1, 0)]" in text
    assert "  if j < i {\n    lower[i, j] = acc\n  }" in text
    assert "node doubled = @doubled\n" in text
    for m, k, n in ((9, 7, 11), (1, 3, 1), (40, 33, 70)):
        data = nests_inputs(m, k, n)
        want = Interpreter(module).run(**data)
        for name, value in Interpreter(changed).run(**data).items():
            np.testing.assert_array_equal(value, want[name], err_msg=name)
        for target in usable_targets(("cpu", "gpu_opencl")):
            exe = hpvm.compile(changed, [target])
            assert_outputs_close(exe(**data), want, 1e-4, 1e-4, target)


def test_a_row_written_as_loops_over_the_columns_in_turn_becomes_one_loop_first():
    """PolyBench 4.2's gemm: ``for j: C[i, j] *= beta`` then ``for k: for j:
    C[i, j] += ...`` in each row; the nest swapped and fused with the
    scaling, the same sums in the same order."""
    from benchmarks import polybench
    module = polybench.gemm.build()
    changed = run_pipeline(module, "loop-instances{reused=true}", verify_each=True)
    text = print_module(changed)
    assert "node gemm = @gemm_instances [max(N, 0), max(N, 0)]" in text
    assert "let C_element: f32 = C[i, j] * beta\n  for k in 0 .. N step 1 {" in text
    data = polybench.inputs_for("gemm", np.random.default_rng(4), 23, 0)
    want = Interpreter(module).run(**data)
    np.testing.assert_array_equal(Interpreter(changed).run(**data)["C"], want["C"])


def test_the_cpu_default_pipeline_runs_such_a_product_in_register_tiles():
    from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE
    exe = hpvm.compile(nests, ["cpu"], options={"pipeline": "default"})
    text = exe.artifacts["cpu"].files["module.hpvm"].decode()
    assert "node product = @product_instances_register_tiled" in text
    assert f"{{{SCHEDULE_ATTRIBUTE} = [" in text
    data = nests_inputs(40, 33, 70)
    assert_outputs_close(exe(**data), Interpreter(nests.build()).run(**data), 1e-4, 1e-4)


@hl.program
def triangles(a: Buffer[f32, "M", "K"], band: Out[Buffer[f32, "M", "M"]],
              crossed: Out[Buffer[f32, "M", "M"]], upper: InOut[Buffer[f32, "M", "M"]]):
    with task(ins=(a,), outs=(band,), name="band"):
        for i in range(M):
            for j in range(i, min(i + 3, M)):
                acc: f32 = 0.0
                for k in range(K):
                    acc += a[i, k] * a[j, k]
                band[i, j] = acc
    with task(ins=(a,), outs=(crossed,), name="crossed"):
        for i in range(M):
            for j in range(i + 1):
                acc: f32 = 0.0
                for k in range(K):
                    acc += a[i - j, k] * a[j, k]
                crossed[i, j] = acc
    with task(ins=(a, upper), outs=(upper,), name="upper"):   # covariance's, with its mirror
        for i in range(M):
            for j in range(i + 1, M):
                upper[i, j] = 0.5 * upper[i, j]
                for k in range(K):
                    upper[i, j] += a[i, k] * a[j, k]
                upper[j, i] = upper[i, j]


@pytest.mark.parametrize("program, node, reason", [
    (nests, "doubled", "as instances of 'i' and 'j' has no single counted loop"),
    (nests, "totals", "iterations that may share what its body writes.*needs 'j'"),
    (triangles, "band", "a loop 'j' whose bounds are more than arithmetic"),
    (triangles, "crossed", "a triangle that reads 'a' at an index following both 'i' and 'j'"),
])
def test_nests_two_dimensions_could_not_run_are_refused_with_the_reason(program, node, reason):
    """No reuse in two dimensions (doubled), iterations sharing (totals),
    a band, or a triangle whose box would read outside its arrays."""
    with pytest.raises(PassError, match=reason):
        run_pipeline(program.build(), f"loop-instances{{reused=true nodes={node}}}")


def test_a_triangle_and_its_mirror_run_over_the_box_bit_for_bit():
    module = triangles.build()
    changed = run_pipeline(module, "loop-instances{reused=true}", verify_each=True)
    text = print_module(changed)
    assert "node upper = @upper_instances [max(M, 0), max(M - 1, 0)]" in text
    assert "node band = @band\n" in text and "node crossed = @crossed\n" in text
    for m, k in ((9, 7), (1, 3), (33, 20)):
        rng = np.random.default_rng(m)
        data = {"a": rng.standard_normal((m, k)).astype(np.float32),
                "upper": rng.standard_normal((m, m)).astype(np.float32)}
        want = Interpreter(module).run(**data)
        got = Interpreter(changed).run(**data)
        np.testing.assert_array_equal(got["upper"], want["upper"])
        exe = hpvm.compile(changed, ["cpu"], options={"pipeline": "default"})
        assert_outputs_close(exe(**data), want, 1e-4, 1e-4, "cpu")


def test_a_loop_whose_bounds_choose_a_value_stays_a_task():
    """A replication's size is arithmetic, min and max (shapes.evaluate_size);
    an unrolled loop's main part stops at a select."""
    source = print_module(FORMS["matvec_loops"].build())
    from hpvm.ir.text import parse_module
    chosen = parse_module(source.replace("for i in 0 .. M step 1",
                                         "for i in 0 .. select(M >= 2, M, 2) step 1"))
    assert run_pipeline(chosen, "loop-instances") == chosen
    with pytest.raises(PassError, match="bounds are more than arithmetic, min and max"):
        run_pipeline(chosen, "loop-instances{nodes=matvec_loops}")


def test_independent_columns_inside_dependent_rows_run_as_the_instances():
    """trmm's rows read the rows after them, which later rows update; its
    columns share nothing. The columns are swapped outwards, past the rows
    and their steps, and run as instances, bit for bit."""
    from benchmarks import polybench
    module = run_pipeline(polybench.FORMS["trmm"].build(), "task-split")
    changed = run_pipeline(module, "loop-instances", verify_each=True)
    text = print_module(changed)
    assert "func @trmm_instances(in A: f32[M, M], inout B: f32[M, N], in alpha: f32) {\n" \
           "  let j: i64 = instance_id(0)\n  for i in 0 .. M step 1 {\n" \
           "    for k in i + 1 .. M step 1 {" in text
    for size in (1, 9):
        data = polybench.inputs_for("trmm", np.random.default_rng(size), size, 0)
        want = Interpreter(module).run(**data)
        np.testing.assert_array_equal(Interpreter(changed).run(**data)["B"], want["B"])


def test_independent_columns_inside_one_loop_over_rows_run_in_strips():
    """atax's ``y[j] += A[i, j] * tmp[i]``: one core walking rows beats the
    cores walking columns; the cores walking the rows of strips of columns
    beat both (strip_instances.py), bit for bit."""
    from benchmarks import polybench
    module = run_pipeline(polybench.atax.build(), "task-split")
    changed = run_pipeline(module, "loop-instances{cores=16},dce", verify_each=True)
    text = print_module(changed)
    assert "node atax_2 = @atax_2_instances [max((N + max(256, (N + 255) / 256 * 16) - 1)" in text
    computes_the_same("atax", module, changed, ((3, 3), (300, 300)))


def test_outward_takes_only_loops_swapped_outwards():
    """symm's columns share nothing, its rows update the rows above them:
    with ``outward`` the columns run as instances before loop-interchange
    would cut them into strips; a loop that runs as instances as it
    stands is left to the plain pass, and refused when named."""
    from benchmarks import polybench
    symm = polybench.FORMS["symm"].build()
    text = print_module(run_pipeline(symm, "loop-instances{outward=true}", verify_each=True))
    assert "node symm = @symm_instances [max(N, 0)]" in text
    assert "  let j: i64 = instance_id(0)\n  for i in 0 .. M step 1 {" in text
    rows = nests.build()
    assert run_pipeline(rows, "loop-instances{outward=true}") == rows
    with pytest.raises(PassError, match="has no loop inside its loop 'i' to run outwards"):
        run_pipeline(rows, "loop-instances{outward=true nodes=doubled}")
