"""copy-propagation: an output that copies a buffer of its node element by
element is not made, its readers read what it copied (the input's
producer, the graph's parameter, or the node's other output); copies that
are not whole, that transpose, that a later store changes, or that the
graph returns stay, and every program computes what it did."""
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import run_pipeline
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import time_steps  # noqa: E402

COPY = """hpvm 1.3
module copies

func @scale(in a: f32[N], out s: f32[N]) {
  let i: i64 = instance_id(0)
  s[i] = a[i] * f32(2.0)
}

func @copy(in s: f32[N], out c: f32[N]) {
  let i: i64 = instance_id(0)
  COPY
}

func @add(in s: f32[N], in c: f32[N], out b: f32[N]) {
  let i: i64 = instance_id(0)
  b[i] = s[i] + c[i]
}

graph @main(in a: f32[N], out b: f32[N]) {
  node scale = @scale [N]
  node copy = @copy [N]
  node add = @add [N]
  edge scale.s -> copy.s all-to-all
  edge scale.s -> add.s all-to-all
  edge copy.c -> add.c all-to-all
  in a -> scale.a
  out add.b -> b
}

root @main
"""


def propagated(text: str) -> str:
    return print_module(run_pipeline(parse_module(text), "copy-propagation,dce",
                                     verify_each=True))


def check_same_results(text: str) -> None:
    module = parse_module(text)
    after = run_pipeline(module, "copy-propagation,dce", verify_each=True)
    a = np.random.default_rng(0).standard_normal(19).astype(np.float32)
    expected = Interpreter(module).run(a=a)
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(after, [target])(a=a), expected, 0, 0, target)


def test_a_copy_of_a_producers_output_is_read_from_the_producer():
    text = COPY.replace("COPY", "c[i] = s[i]")
    result = propagated(text)
    assert "node copy" not in result
    assert "edge scale.s -> add.c all-to-all" in result
    check_same_results(text)


def test_a_copy_of_the_graphs_input_is_read_from_the_parameter():
    text = COPY.replace("COPY", "c[i] = s[i]").replace(
        "edge scale.s -> copy.s all-to-all\n", "").replace(
        "  in a -> scale.a\n", "  in a -> scale.a\n  in a -> copy.s\n")
    result = propagated(text)
    assert "node copy" not in result and "in a -> add.c" in result
    check_same_results(text)


@pytest.mark.parametrize("copy", [
    "if i > 0 {\n    c[i] = s[i]\n  }",                  # not every element
    "c[i] = s[N - 1 - i]",                                 # another element
    "c[i] = s[i] * f32(1.0)",                              # not a plain copy
])
def test_what_is_not_a_whole_copy_stays(copy):
    text = COPY.replace("COPY", copy)
    assert "node copy" in propagated(text)
    check_same_results(text)


PRIVATE = """hpvm 1.3
module private_copy

func @k(in a: f32[4], out b: f32[4]) {
  let i: i64 = instance_id(0)
  private t: f32[4]
  t[i] = a[i] * f32(2.0)
  b[i] = t[i]
}

func @use(in b: f32[4], out c: f32[4]) {
  let i: i64 = instance_id(0)
  c[i] = b[i] + f32(1.0)
}

graph @main(in a: f32[4], out c: f32[4]) {
  node k = @k [4]
  node use = @use [4]
  edge k.b -> use.b all-to-all
  in a -> k.a
  out use.c -> c
}

root @main
"""


def test_a_copy_of_a_private_array_stays():
    assert propagated(PRIVATE) == print_module(run_pipeline(parse_module(PRIVATE), "dce"))


def test_a_copy_the_graph_returns_stays():
    text = COPY.replace("COPY", "c[i] = s[i]").replace(
        "@main(in a: f32[N], out b: f32[N])", "@main(in a: f32[N], out b: f32[N], out c: f32[N])"
    ).replace(
        "  out add.b -> b\n", "  out add.b -> b\n  out copy.c -> c\n")
    assert "node copy" in propagated(text)


TWO_OUTPUTS = """hpvm 1.3
module two

func @step(in a: f32[N], out u: f32[N], out old: f32[N]) {
  let i: i64 = instance_id(0)
  u[i] = a[i] + f32(1.0)
  old[i] = u[i]
  LATER
}

func @use(in old: f32[N], out b: f32[N]) {
  let i: i64 = instance_id(0)
  b[i] = old[i] * f32(3.0)
}

graph @main(in a: f32[N], out b: f32[N], out u: f32[N]) {
  node step = @step [N]
  node use = @use [N]
  edge step.old -> use.old all-to-all
  in a -> step.a
  out use.b -> b
  out step.u -> u
}

root @main
"""


def test_a_copy_of_another_output_of_the_node_reads_that_output():
    text = TWO_OUTPUTS.replace("  LATER\n", "")
    result = propagated(text)
    assert "func @step(in a: f32[N], out u: f32[N])" in result
    assert "edge step.u -> use.old all-to-all" in result


def test_a_copy_of_an_output_stored_again_later_stays():
    text = TWO_OUTPUTS.replace("  LATER\n", "  u[i] = f32(0.0)\n")
    assert "out old: f32[N]" in propagated(text)


@pytest.mark.parametrize("name", list(time_steps.FORMS))
def test_time_steps_fused_and_propagated_write_only_the_grid(name):
    """Rodinia's old copy is read from the grid it copied."""
    program = time_steps.FORMS[name]
    module = run_pipeline(program.build(), "node-fusion,copy-propagation,dce", verify_each=True)
    for node in module.root_graph.nodes:
        outputs = [p for p in module.function(node.body.function).params if p.direction == "out"]
        assert len(outputs) == 1
    inputs = time_steps.inputs_for(name, np.random.default_rng(4), 11, 7)
    expected = {"u": time_steps.reference(name, inputs)}
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(u=inputs["u"].copy()), expected,
                             1e-5, 1e-5, f"{name} on {target}")


def test_cfds_copies_of_its_state_are_gone():
    from benchmarks.suite import get
    bench = get("cfd")
    module = run_pipeline(bench.build(), "node-fusion,copy-propagation,dce", verify_each=True)
    assert len(module.root_graph.nodes) == 6
    assert not any(p.name.startswith("old_variables") for f in module.functions.values()
                   for p in f.params if p.direction == "out")
    inputs = bench.make_inputs("small", np.random.default_rng(0))
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(module, [target])(**inputs), bench.reference(inputs),
                             bench.rtol, bench.atol, f"cfd on {target}")

