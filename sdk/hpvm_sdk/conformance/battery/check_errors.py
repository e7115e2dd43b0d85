"""Error handling: bad inputs are refused with an ExecutionError that names
the parameter, before anything is launched on the target's device; the same
executable then still runs good inputs."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm.interp import run_module
from hpvm.testing import random_inputs
from hpvm_sdk.conformance.programs import by_name

N = 8
CASES = ("missing input", "unknown input", "wrong dtype", "wrong rank", "array for a scalar",
         "sizes disagree")


def _module(hpvm_target):
    """saxpy (x, y: f32[N], a: f32) for kernel targets, else a chain of the
    tensor op the target claims (a: f32[N])."""
    if hpvm_target.stage is None:
        return by_name("saxpy").load()
    name = hpvm_target.name
    return hpvm_target.chain((name, name, name))


def _bad_inputs(case: str, good: dict, graph) -> tuple[dict, str]:
    """Inputs that are wrong in the way ``case`` says, and the name the
    error must mention; skips when the program has no such parameter."""
    buffers = [p.name for p in graph.params if p.reads and p.is_buffer]
    scalars = [p.name for p in graph.params if p.reads and not p.is_buffer]
    first = buffers[0]
    if case == "missing input":
        return {k: v for k, v in good.items() if k != first}, first
    if case == "unknown input":
        return {**good, "zz_unknown": good[first]}, "zz_unknown"
    if case == "wrong dtype":
        return {**good, first: good[first].astype(np.float64)}, first
    if case == "wrong rank":
        return {**good, first: np.stack([good[first]] * 2, axis=1)}, first
    if case == "array for a scalar" and scalars:
        return {**good, scalars[0]: np.ones(2, np.float32)}, scalars[0]
    if case == "sizes disagree" and len(buffers) > 1:
        return {**good, buffers[1]: np.resize(good[buffers[1]], N + 1)}, "N"
    pytest.skip("the program has no parameter to get wrong this way")


@pytest.fixture
def launches(hpvm_target, monkeypatch):
    """Nodes launched on the target's devices while the test runs."""
    launched = []
    load = hpvm_target.target.load

    def counting_load(artifact, options):
        device = load(artifact, options)
        launch, bind = device.launch, device.bind

        def counting_launch(node, args):
            launched.append(node)
            return launch(node, args)

        def counting_bind(node, args):  # launches the runtime prepared once
            launcher = bind(node, args)

            def counting_launcher(changed):
                launched.append(node)
                return launcher(changed)
            return counting_launcher
        device.launch, device.bind = counting_launch, counting_bind
        return device
    monkeypatch.setattr(hpvm_target.target, "load", counting_load)
    return launched


@pytest.mark.parametrize("case", CASES)
def test_bad_inputs_are_refused_before_launch(hpvm_target, launches, case):
    module = _module(hpvm_target)
    exe = hpvm_target.compile(module)
    hpvm_target.require_nodes(exe)
    good = random_inputs(module.root_graph, {"N": N})
    inputs, culprit = _bad_inputs(case, good, module.root_graph)
    with pytest.raises(ExecutionError, match=f"'{culprit}'"):
        exe(**inputs)
    assert launches == [], f"{case}: the target launched {launches} before the inputs were checked"
    hpvm_target.assert_close(exe(**good), run_module(module, good))  # still usable
    assert launches, "the good run launched nothing on the target"
    exe.close()
