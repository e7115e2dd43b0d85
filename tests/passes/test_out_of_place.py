"""In-place updates run out of place (core/passes/out_of_place.py): a dead
old value drops its edge (dead-inputs, and node-fusion's pairs); an old
value read before it is overwritten moves to an ``_old`` port, so that
node-fusion fuses a time step ``u = u + dt * k`` into the stencil that
computed ``k``.  Every refusal names its reason; random kernels that read
and write an in-out buffer in every order compute, wherever they are
admitted, what they computed in place, bit for bit."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module, print_module
from hpvm.passes import PassError, run_pipeline
from hpvm.passes.node_fusion import fusible_pairs
from hpvm.passes.out_of_place import OutOfPlace, out_of_place, run_out_of_place
from hpvm.testing import assert_outputs_close, usable_targets

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks import time_steps  # noqa: E402

UPDATE = "u[i] = u[i] + f32(0.5) * k[i]"

EULER = """hpvm 1.3
module euler

func @slope(in u: f32[N], out k: f32[N]) {
  let i: i64 = instance_id(0)
  k[i] = u[max(i - 1, 0)] - f32(2.0) * u[i] + u[min(i + 1, N - 1)]
}

func @update(in k: f32[N], inout u: f32[N]) {
  let i: i64 = instance_id(0)
  UPDATE
}

graph @main(inout u: f32[N]) {
  node slope = @slope [N]
  node update = @update [N]
  edge slope.k -> update.k all-to-all
  in u -> slope.u
  in u -> update.u
  out update.u -> u
}

root @main
"""


def euler(update: str = UPDATE) -> str:
    return EULER.replace("UPDATE", update)


def plan_of(text: str, function: str = "update", port: str = "u"):
    module = parse_module(text)
    node = next(n for n in module.root_graph.nodes if n.body.function == function)
    return out_of_place(module.function(function), port, node.replication)


def test_a_time_step_reading_its_old_value_fuses_into_the_stencil_before_it():
    module = parse_module(euler())
    assert fusible_pairs(module) == ["slope:update"]
    fused = run_pipeline(module, "node-fusion,dce", verify_each=True)
    text = print_module(fused)
    assert "func @slope_update(in u: f32[N], out u_1: f32[N], in u_old: f32[N])" in text
    assert "u_1[i] = u_old[i] + f32(0.5) * k_private" in text
    assert "in u -> slope_update.u_old" in text and "out slope_update.u_1 -> u" in text
    u = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    expected = Interpreter(module).run(u=u.copy())
    for target in usable_targets():
        assert_outputs_close(hpvm.compile(fused, [target])(u=u.copy()), expected, 1e-6, 1e-6,
                             f"fused on {target}")


@pytest.mark.parametrize("name", list(time_steps.FORMS))
def test_every_written_time_step_fuses_into_its_stencil_on_every_target(name):
    """benchmarks/time_steps.py: in place, copied back, from an old copy."""
    program = time_steps.FORMS[name]
    fused = run_pipeline(program.build(), "node-fusion,dce", verify_each=True)
    assert len(fused.root_graph.nodes) == time_steps.STEPS
    inputs = time_steps.inputs_for(name, np.random.default_rng(3), 13, 9)
    expected = {"u": time_steps.reference(name, inputs)}
    for target in usable_targets():
        for module in (program.build(), fused):
            assert_outputs_close(hpvm.compile(module, [target])(u=inputs["u"].copy()), expected,
                                 1e-5, 1e-5, f"{name} on {target}")


def test_a_dead_old_value_loses_its_edge():
    text = euler("u[i] = f32(0.5) * k[i]")
    assert plan_of(text) == OutOfPlace(0)
    result = print_module(run_pipeline(parse_module(text), "dead-inputs", verify_each=True))
    assert "func @update(in k: f32[N], out u: f32[N])" in result
    assert "in u -> update.u" not in result


def test_dead_inputs_leaves_old_values_that_are_read():
    assert plan_of(euler()) == OutOfPlace(2)
    text = euler()
    assert print_module(run_pipeline(parse_module(text), "dead-inputs")) == \
        print_module(parse_module(text))


CHANNELS = EULER.replace("f32[N]", "f32[2, N]").replace("k[i] = u[max(i - 1, 0)] - f32(2.0) * "
                                                       "u[i] + u[min(i + 1, N - 1)]",
                                                       "k[0, i] = u[0, i]\n  k[1, i] = u[1, i]")


@pytest.mark.parametrize("update, plan", [
    ("u[0, i] = k[0, i]\n  u[1, i] = k[1, i]", OutOfPlace(0)),
    ("for c in 0 .. 2 step 1 {\n    u[c, i] = u[c, i] * k[c, i]\n  }", OutOfPlace(2)),
    ("let a: f32 = u[1, i]\n  u[1, i] = k[1, i]\n  u[0, i] = a", OutOfPlace(2)),
    ("u[0, i] = k[0, i]\n  u[1, i] = k[1, i]\n  u[0, i] = u[1, i] * f32(2.0)", OutOfPlace(0)),
    ("u[0, i] = u[1, i]\n  u[1, i] = k[1, i]", OutOfPlace(2)),
    ("if k[0, i] > f32(0.0) {\n    u[0, i] = u[0, i] * f32(2.0)\n  } else {\n"
     "    u[0, i] = k[0, i]\n  }\n  u[1, i] = k[1, i]", OutOfPlace(2)),
])
def test_channels_written_one_by_one_or_in_a_loop(update, plan):
    text = CHANNELS.replace("UPDATE", update)
    assert plan_of(text) == plan
    module = parse_module(text)
    node = module.root_graph.node("update")
    changed = run_out_of_place(module, "main", "update")
    u = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    np.testing.assert_array_equal(Interpreter(changed).run(u=u.copy())["u"],
                                  Interpreter(module).run(u=u.copy())["u"])
    assert node.replication == changed.root_graph.node("update").replication


@pytest.mark.parametrize("update, message", [
    ("u[i] = u[min(i + 1, N - 1)] + k[i]", "accesses 'u' at elements other instances write"),
    ("if k[i] > f32(0.0) {\n    u[i] = k[i]\n  }", "does not write every element of 'u'"),
    ("if k[i] > f32(0.0) {\n    return\n  }\n  u[i] = k[i]", "may return before it writes 'u'"),
])
def test_updates_that_must_stay_in_place_say_why(update, message):
    assert message in plan_of(euler(update))
    with pytest.raises(PassError, match=f"'update' updates a buffer in place: .*{message}"):
        run_pipeline(parse_module(euler(update)), "node-fusion{pairs=slope:update}")


@pytest.mark.parametrize("update, message", [
    ("u[0, i] = k[0, i]\n  u[1, i] = u[0, i]",
     "reads elements of 'u' that it may have overwritten"),
    ("let a: f32 = u[1, i]\n  u[0, i] = a\n  u[1, i] = u[0, i] + a",
     "reads elements of 'u' that it may have overwritten"),
    ("for c in 0 .. 2 step 1 {\n    u[c, i] = k[c, i]\n    u[c, i] = u[c, i] + u[c, i]\n  }",
     "reads elements of 'u' that it may have overwritten"),
    ("for c in 0 .. 2 step 1 {\n    u[1 - c, i] = u[1 - c, i] + k[c, i]\n  }",
     "reads elements of 'u' that it may have overwritten"),
    ("u[0, i] = k[0, i]", "does not write every element of 'u'"),
    ("if k[0, i] > f32(0.0) {\n    u[0, i] = k[0, i]\n  } else {\n    u[1, i] = k[1, i]\n  }\n"
     "  u[1, i] = k[1, i]", "does not write every element of 'u'"),
])
def test_channel_updates_that_must_stay_in_place_say_why(update, message):
    assert message in plan_of(CHANNELS.replace("UPDATE", update))


# -- random kernels ---------------------------------------------------------
KERNEL = """hpvm 1.3
module random

func @step(in x: f32[3, N], inout u: f32[3, N], out y: f32[N]) {
  let i: i64 = instance_id(0)
  let t: f32 = f32(0.0)
BODY
  y[i] = t
}

graph @main(in x: f32[3, N], inout u: f32[3, N], out y: f32[N]) {
  node step = @step [N]
  in x -> step.x
  in u -> step.u
  out step.u -> u
  out step.y -> y
}

root @main
"""

channel = st.integers(0, 2)
reads = st.one_of(
    st.builds("x[{}, i]".format, channel), st.builds("u[{}, i]".format, channel),
    st.just("t"), st.just("f32(1.5)"))
loop_reads = st.one_of(reads, st.just("u[c, i]"), st.just("x[c, i]"), st.just("u[2 - c, i]"))


def _sum(terms) -> str:
    return " + ".join(terms)


statements = st.one_of(
    st.builds(lambda c, v: f"  u[{c}, i] = {_sum(v)}", channel, st.lists(reads, min_size=1,
                                                                        max_size=3)),
    st.builds(lambda v: f"  for c in 0 .. 3 step 1 {{\n    u[c, i] = {_sum(v)}\n  }}",
              st.lists(loop_reads, min_size=1, max_size=3)),
    st.builds(lambda v: f"  t = {_sum(v)}", st.lists(reads, min_size=1, max_size=3)),
    st.builds(lambda c, v: f"  if x[0, i] > f32(0.0) {{\n    u[{c}, i] = {_sum(v)}\n  }}",
              channel, st.lists(reads, min_size=1, max_size=2)),
    st.builds(lambda c, v, w: f"  if x[1, i] > f32(0.0) {{\n    u[{c}, i] = {_sum(v)}\n  }} "
                              f"else {{\n    u[{c}, i] = {_sum(w)}\n  }}",
              channel, st.lists(reads, min_size=1, max_size=2),
              st.lists(reads, min_size=1, max_size=2)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statements, min_size=1, max_size=5))
def test_random_kernels_admitted_out_of_place_compute_what_they_did_in_place(body):
    module = parse_module(KERNEL.replace("BODY", "\n".join(body)))
    changed = run_out_of_place(module, "main", "step")
    rng = np.random.default_rng(2)
    inputs = {"x": rng.standard_normal((3, 8)).astype(np.float32),
              "u": rng.standard_normal((3, 8)).astype(np.float32)}
    before = Interpreter(module).run(**{k: v.copy() for k, v in inputs.items()})
    after = Interpreter(changed).run(**{k: v.copy() for k, v in inputs.items()})
    for name in ("u", "y"):
        np.testing.assert_array_equal(after[name], before[name])


def test_random_kernels_are_admitted_often_enough_to_test_the_checks():
    admitted = 0
    examples = []

    @settings(max_examples=200, deadline=None, database=None, derandomize=True)
    @given(st.lists(statements, min_size=1, max_size=5))
    def count(body):
        nonlocal admitted
        module = parse_module(KERNEL.replace("BODY", "\n".join(body)))
        node = module.root_graph.node("step")
        plan = out_of_place(module.function("step"), "u", node.replication)
        examples.append(plan)
        admitted += isinstance(plan, OutOfPlace)

    count()
    assert admitted >= len(examples) // 10
