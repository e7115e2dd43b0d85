"""Error handling: bad inputs are refused with an ExecutionError that names
the parameter, before anything is launched on the target's device; the same
executable then still runs good inputs."""
import numpy as np
import pytest

from hpvm.errors import ExecutionError
from hpvm_sdk.conformance.programs import by_name

SAXPY = by_name("saxpy")  # in x, y: f32[N]; in a: f32; out out: f32[N]
N = 8


def _good():
    return {"x": np.ones(N, np.float32), "y": np.ones(N, np.float32), "a": np.float32(2)}


BAD_INPUTS = {
    "missing input": ({"x": np.ones(N, np.float32), "a": 2.0}, "y"),
    "unknown input": ({**_good(), "z": np.ones(N, np.float32)}, "z"),
    "wrong dtype": ({**_good(), "x": np.ones(N, np.float64)}, "x"),
    "wrong rank": ({**_good(), "y": np.ones((N, 2), np.float32)}, "y"),
    "array for a scalar": ({**_good(), "a": np.ones(2, np.float32)}, "a"),
    "sizes disagree": ({**_good(), "y": np.ones(N + 1, np.float32)}, "N"),
}


@pytest.fixture
def launches(hpvm_target, monkeypatch):
    """Nodes launched on the target's devices while the test runs."""
    launched = []
    load = hpvm_target.target.load

    def counting_load(artifact, options):
        device = load(artifact, options)
        launch = device.launch

        def counting_launch(node, args):
            launched.append(node)
            return launch(node, args)
        device.launch = counting_launch
        return device
    monkeypatch.setattr(hpvm_target.target, "load", counting_load)
    return launched


@pytest.mark.parametrize("case", BAD_INPUTS, ids=str)
def test_bad_inputs_are_refused_before_launch(hpvm_target, launches, case):
    inputs, culprit = BAD_INPUTS[case]
    exe = hpvm_target.compile(SAXPY.load())
    hpvm_target.require_nodes(exe, "program 'saxpy'")
    with pytest.raises(ExecutionError, match=f"'{culprit}'"):
        exe(**inputs)
    assert launches == [], f"{case}: the target launched {launches} before the inputs were checked"
    result = exe(**_good())  # the executable is still usable
    np.testing.assert_allclose(result["out"], np.full(N, 3, np.float32))
    assert launches, "the good run launched nothing on the target"
    exe.close()
