"""parallel-reduce{form=ordered}: lanes compute the terms of each
instance's fold, one lane per instance adds them up in the order written.
No result changes (bit for bit in the golden model, float sums written as
chains included, without reassociate); the lanes past the node's end and
past a group's instances store nothing; nodes it cannot take are refused
with the reason."""
import numpy as np
import pytest

import hpvm
import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.kernel import For
from hpvm.ir.text import print_module
from hpvm.ir.visit import walk
from hpvm.lang import Buffer, Out, cos, f32, i32, parallel_loop, private_array, reduce, sin, task
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.parallel_reduce import eligible_nodes
from hpvm.testing import assert_outputs_close, usable_targets


@hl.program
def folds(a: Buffer[f32, "R", "C"], w: Buffer[f32, "C"], s: Buffer[f32, "R"],
          n: Buffer[i32, "R", "C"], waves: Out[Buffer[f32, "R", 2]],
          stats: Out[Buffer[f32, "R", 3]], counts: Out[Buffer[i32, "R"]],
          smooth: Out[Buffer[f32, "R"]]):
    for r in parallel_loop(R, ins=(a, w, s), outs=(waves,), name="wave"):
        scale = s[r]
        real: f32 = 0.0
        imag: f32 = 0.0
        for c in range(C):
            phase = a[r, c] * w[c] * scale
            real += w[c] * cos(phase)
            imag = w[c] * sin(phase) + imag
        waves[r, 0] = real * scale
        waves[r, 1] = imag
    for r in parallel_loop(R, ins=(a, n), outs=(stats, counts), name="stats"):
        total: f32 = 0.0
        for c in range(C):
            total += a[r, c]
        high: f32 = -1e30
        for c in range(1, C, 2):
            high = max(high, a[r, c])
        counts[r] = reduce("+", (n[r, c] for c in range(C)))
        stats[r, 0] = total
        stats[r, 1] = high
        stats[r, 2] = total / f32(C)
    for r in parallel_loop(R, ins=(a,), outs=(smooth,), name="taps"):
        taps = private_array(f32, (3,))
        for t in range(3):
            taps[t] = a[r, t] * 0.5
        acc: f32 = 0.0
        for c in range(C):
            acc += a[r, c] * taps[c % 3]
        smooth[r] = acc


@hl.program
def batched(a: Buffer[f32, "B", "R", "C"], v: Buffer[f32, "C"],
            dots: Out[Buffer[f32, "B", "R"]]):
    for b, r in parallel_loop(B, R, ins=(a, v), outs=(dots,), name="dot"):
        acc: f32 = 1.0
        for c in range(C - 1, -1, -1):
            acc = acc + a[b, r, c] * v[c]
        dots[b, r] = acc


@hl.program
def blocks(a: Buffer[f32, "K", "C"], sums: Out[Buffer[f32, 3, "C"]]):
    for block, c in parallel_loop(3, C, ins=(a,), outs=(sums,), name="columns"):
        rows = (K + 2) // 3
        first = block * rows
        acc: f32 = 0.0
        for k in range(first, min(first + rows, K)):
            acc += a[k, c] * a[k, c]
        sums[block, c] = acc


def folds_inputs(rng, rows=37, cols=203):
    return {"a": rng.standard_normal((rows, cols)).astype(np.float32),
            "w": rng.uniform(-1, 1, cols).astype(np.float32),
            "s": rng.uniform(0.5, 2, rows).astype(np.float32),
            "n": rng.integers(-9, 9, (rows, cols)).astype(np.int32)}


def _ordered(module, lanes, instances, nodes=""):
    chosen = f" nodes={nodes}" if nodes else ""
    return run_pipeline(module, f"parallel-reduce{{form=ordered lanes={lanes} "
                                f"instances={instances}{chosen}}}", verify_each=True)


@pytest.mark.parametrize("lanes, instances, rows", [(8, 4, 37), (4, 32, 37), (16, 2, 1),
                                                    (2, 64, 200)])
def test_every_result_is_the_program_s_bit_for_bit(lanes, instances, rows):
    """Instances past the node's end (37 is no multiple of the groups),
    several loops in one node, folds with min, an integer reduce(), a
    term's operand order, a value read by both the terms and what follows
    the loops, and a private array the terms read."""
    module = folds.build()
    ordered = _ordered(module, lanes, instances)
    text = print_module(ordered)
    assert f"node wave = @wave_ordered [R, {lanes}] {{group = [{instances}, {lanes}], " \
           "padded_groups = true}" in text
    assert "@stats_ordered" in text and "@taps_ordered" in text
    inputs = folds_inputs(np.random.default_rng(rows), rows=rows)
    expected = Interpreter(module).run(**inputs)
    got = Interpreter(ordered).run(**inputs)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_node_of_two_dimensions_folds_its_innermost_instances():
    module = batched.build()
    ordered = _ordered(module, 8, 8)
    assert "node dot = @dot_ordered [B, R, 8] {group = [1, 8, 8]" in print_module(ordered)
    inputs = {"a": np.random.default_rng(5).standard_normal((3, 13, 70)).astype(np.float32),
              "v": np.random.default_rng(6).standard_normal(70).astype(np.float32)}
    np.testing.assert_array_equal(Interpreter(ordered).run(**inputs)["dots"],
                                  Interpreter(module).run(**inputs)["dots"])


def test_bounds_of_an_outer_instance_are_the_same_in_a_work_group():
    """A work group's instances differ only in the innermost dimension:
    each block's rows (backprop's partial sums) are its loop's bounds."""
    module = blocks.build()
    ordered = _ordered(module, 4, 16)
    inputs = {"a": np.random.default_rng(8).standard_normal((301, 21)).astype(np.float32)}
    np.testing.assert_array_equal(Interpreter(ordered).run(**inputs)["sums"],
                                  Interpreter(module).run(**inputs)["sums"])


def test_the_new_kernel_keeps_no_reduction_marks_the_program_did_not_write():
    """The float folds are found as reductions to be rewritten; a mark
    left on any loop would let a later pass reorder its sum."""
    ordered = _ordered(folds.build(), 8, 4, "wave")
    function = ordered.function("wave_ordered")
    assert not [s for s in walk(function.body) if isinstance(s, For) and s.reduce]
    assert "barrier" in print_module(ordered)


def test_gpu_opencl_runs_the_ordered_form():
    if "gpu_opencl" not in usable_targets():
        pytest.skip("gpu_opencl is not usable here")
    module = folds.build()
    inputs = folds_inputs(np.random.default_rng(7))
    expected = Interpreter(module).run(**inputs)
    exe = hpvm.compile(_ordered(module, 8, 16), ["gpu_opencl"])
    assert set(exe.placement.targets.values()) == {"gpu_opencl"}, exe.placement.format()
    assert_outputs_close(exe(**inputs), expected, 1e-4, 1e-4, "gpu_opencl")


@hl.program
def uneven(ptr: Buffer[i32, "P"], values: Buffer[f32, "V"], flags: Buffer[i32, "R"],
           x: Buffer[f32, "R"], rows: Out[Buffer[f32, "R"]], picked: Out[Buffer[f32, "R"]],
           total: Out[Buffer[f32, 1]], seeded: Out[Buffer[f32, "R"]]):
    for r in parallel_loop(R, ins=(ptr, values), outs=(rows,), name="csr"):
        acc: f32 = 0.0
        for k in range(ptr[r], ptr[r + 1]):
            acc += values[k]
        rows[r] = acc
    for r in parallel_loop(R, ins=(flags, x), outs=(picked,), name="guarded"):
        acc: f32 = 0.0
        for k in range(R):
            if flags[k] > 0:
                acc += x[k]
        picked[r] = acc
    with task(ins=(x,), outs=(total,), name="whole"):
        acc: f32 = 0.0
        for k in range(R):
            acc += x[k]
        total[0] = acc
    for r in parallel_loop(R, ins=(x,), outs=(seeded,), name="seeded"):
        acc: f32 = x[r]
        seed = acc * 2.0
        for k in range(R):
            acc += x[k] * seed
        seeded[r] = acc


@pytest.mark.parametrize("node, reason", [
    ("csr", "bounds differ between the instances of a work group"),
    ("guarded", "updates 'acc' in loop 'k' other than once, at the top of its body"),
    ("whole", "has no replication"),
    ("seeded", "whose terms read 'seed', computed from a folded variable"),
])
def test_ineligible_nodes_are_refused_with_the_reason(node, reason):
    with pytest.raises(PassError, match=reason):
        _ordered(uneven.build(), 8, 4, node)
    assert f"main.{node}" not in eligible_nodes(uneven.build(), "ordered")


def test_a_work_group_past_the_device_limit_is_refused():
    with pytest.raises(PassError, match="at most 1024 in all"):
        _ordered(folds.build(), 64, 32)
