"""``reduce(op, (value for ...), initial=)`` in the kernel language: every
op, nested and filtered generators, typed results; misuse is refused at
the offending line with a fix."""
import operator
from functools import partial
from pathlib import Path

import numpy as np
import hpvm
import hpvm.lang as hl
from hpvm.interp import Interpreter
from hpvm.ir.kernel import For
from hpvm.ir.text import print_module
from hpvm.ir.visit import walk
from hpvm.lang import Buffer, f32, i64, parallel_loop, reduce, task
from hpvm.testing import usable_targets

from . import test_errors

refused = partial(test_errors.refused, here=Path(__file__).resolve())


@hl.program
def folds(x: Buffer[f32, "N"], k: Buffer[i64, "N"], out: Buffer[f32, 4], bits: Buffer[i64, 4]):
    with task(ins=(x, k), outs=(out, bits), name="folds"):
        out[0] = reduce("+", (x[i] for i in range(N)))
        out[1] = reduce(operator.mul, (x[i] for i in range(0, N, 2)), initial=2.0)
        out[2] = reduce(min, (x[i] - x[j] for i in range(N) for j in range(i) if x[j] > 0.5))
        out[3] = reduce(max, (x[i] for i in range(N) if i > 100))
        bits[0] = reduce("^", (k[i] for i in range(N)))
        bits[1] = reduce("&", (k[i] for i in range(N)))
        bits[2] = reduce(operator.or_, (k[i] for i in range(N)))
        bits[3] = reduce("+", (1 for i in range(N) if k[i] % 2 == 0))


def test_every_op_folds_like_python():
    rng = np.random.default_rng(0)
    x = rng.random(9, dtype=np.float32)
    k = rng.integers(0, 1000, 9).astype(np.int64)
    result = Interpreter(folds.build()).run(x=x, k=k)
    pairs = [x[i] - x[j] for i in range(9) for j in range(i) if x[j] > 0.5]
    np.testing.assert_allclose(result["out"], [x.sum(), 2 * np.prod(x[::2]), min(pairs), -np.inf],
                               rtol=1e-5)
    assert list(result["bits"]) == [np.bitwise_xor.reduce(k), np.bitwise_and.reduce(k),
                                    np.bitwise_or.reduce(k), int(np.sum(k % 2 == 0))]


def test_every_loop_of_a_reduce_carries_the_reduction():
    module = folds.build()
    loops = [s for s in walk(module.functions["folds"].body) if isinstance(s, For)]
    assert all(loop.reduce for loop in loops) and len(loops) == 9
    assert "for j in 0 .. i_2 step 1 [reduce reduced_2: min] {" in print_module(module)


def test_a_reduction_in_a_parallel_loop():
    @hl.program
    def rows(x: Buffer[f32, "R", "C"], y: Buffer[f32, "R"]):
        for r in parallel_loop(R, ins=(x,), outs=(y,)):
            y[r] = reduce(max, (abs(x[r, c]) for c in range(C)))
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(rows.build()).run(x=x)["y"], np.abs(x).max(axis=1))


def test_an_unknown_op_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = reduce("-", (x[i] for i in range(N)))  # E-op
    refused(p, "E-op", "not a reduction op")


def test_values_must_come_from_a_generator():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = reduce("+", x[0])  # E-gen
    refused(p, "E-gen", "generator")


def test_bitwise_ops_on_floats_are_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = reduce("^", (x[i] for i in range(N)))  # E-xor
    refused(p, "E-xor", "needs integers")


def test_an_unknown_option_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = reduce("+", (x[i] for i in range(N)), start=1.0)  # E-kw
    refused(p, "E-kw", "no option 'start'")


def test_sum_min_and_max_of_a_generator_are_reductions():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 3]):
        with task(ins=(x,), outs=(y,)):
            y[0] = sum(x[i] for i in range(N))
            y[1] = min(x[i] for i in range(N))
            y[2] = max(x[i] * 2 for i in range(N))
    x = np.random.default_rng(2).random(7, dtype=np.float32)
    module = p.build()
    (function,) = module.functions.values()
    assert sum(1 for s in walk(function.body) if isinstance(s, For) and s.reduce) == 3
    np.testing.assert_allclose(Interpreter(module).run(x=x)["y"], [x.sum(), x.min(), 2 * x.max()],
                               rtol=1e-6)


def test_a_generator_elsewhere_is_refused():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = abs(x[i] for i in range(N))  # E-bare
    refused(p, "E-bare", "only values of reduce")


@hl.kernel
def wider(a: f32, b: f32) -> f32:
    """Keeps the value farther from zero: associative and commutative."""
    if abs(a) >= abs(b):
        return a
    return b


@hl.program
def farthest(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
    with task(ins=(x,), outs=(y,), name="pick"):
        y[0] = reduce(wider, (x[i] for i in range(N)), identity=0.0)


def test_a_helper_op_is_called_by_the_reduction_and_parallelises():
    from hpvm.ir.kernel import Reduction
    from hpvm.passes import run_pipeline
    module = farthest.build()
    assert module.functions["wider"].return_type == f32
    loop = next(s for s in module.functions["pick"].body if isinstance(s, For))
    assert loop.reduce[0].op == "@wider" and loop.reduce[0].identity.value == 0.0
    assert isinstance(loop.reduce[0], Reduction)
    x = np.random.default_rng(3).standard_normal(50).astype(np.float32)
    want = x[np.argmax(np.abs(x))]
    for pipeline in ("", "parallel-reduce{lanes=8 nodes=pick}",
                     "parallel-reduce{form=chunks lanes=4 nodes=pick}"):
        optimised = run_pipeline(module, pipeline, verify_each=True) if pipeline else module
        for target in usable_targets():
            assert hpvm.compile(optimised, [target])(x=x)["y"][0] == want, (pipeline, target)


def test_a_helper_op_needs_its_identity():
    @hl.program
    def p(x: Buffer[f32, "N"], y: Buffer[f32, 1]):
        with task(ins=(x,), outs=(y,)):
            y[0] = reduce(wider, (x[i] for i in range(N)))  # E-identity
    refused(p, "E-identity", "needs identity=")


@hl.kernel
def pick_kernel(x: Buffer[f32, "N"], y: hl.Out[Buffer[f32, 1]]):
    y[0] = reduce(wider, (x[i] for i in range(N)), identity=0.0)


def test_the_graph_builder_carries_the_helper_op_too():
    graph = hl.Graph("g")
    node = graph.leaf(pick_kernel)
    graph.bind_in("x", node.inp("x"))
    graph.bind_out(node.out("y"), "y")
    module = graph.build()
    assert "wider" in module.functions
    x = np.array([0.5, -3.0, 2.0], np.float32)
    assert Interpreter(module).run(x=x)["y"][0] == -3.0
