"""hpvm.ir.testing: the random modules are valid (the verifier accepts
them) and runnable (the interpreter runs them on example inputs)."""
import warnings

from hypothesis import HealthCheck, given, settings

from hpvm.ir.testing import example_inputs, kernel_functions, modules
from hpvm.ir.verify import check

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(modules())
def test_generated_module_passes_the_verifier(module):
    assert check(module) == []


@FAST
@given(modules(weird_names=True, decorations=True))
def test_generated_module_with_quoted_names_passes_the_verifier(module):
    assert check(module) == []


@FAST
@given(modules())
def test_generated_module_runs_on_example_inputs(module):
    from hpvm.interp import run_module
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # float overflow is allowed
        outputs = run_module(module, example_inputs(module))
    expected = {p.name for p in module.root_graph.params if p.direction == "out"}
    assert set(outputs) == expected


@FAST
@given(kernel_functions(shape=(2, "W")))
def test_kernel_writes_its_out_buffer_at_the_instance_element(function):
    outs = [p for p in function.params if p.direction == "out"]
    assert outs and all(p.type.shape == (2, "W") for p in function.params if p.is_buffer)
