"""The pass manager: running pipelines, timings, verify_each, the registry."""
import dataclasses

import pytest

from hpvm.errors import Diagnostic, Location, VerificationError
from hpvm.ir import (
    F32, I64, BufferType, Const, InstanceId, KernelFunction, Parameter, Store, Var,
)
from hpvm.ir.graph import BindIn, BindOut, Graph, KernelBody, Module, Node
from hpvm.passes import (
    Option, PassError, PassManager, PipelineError, get_pass, list_passes,
    register_pass, run_pipeline, unregister_pass,
)


def small_module() -> Module:
    """One node writing 1.0 to every element of its output."""
    out = Parameter("out", BufferType(F32, ("N",)), "out")
    size = Parameter("N", I64)
    kernel = KernelFunction("fill", (size, out), (Store("out", (InstanceId(0),), Const(1.0, F32)),))
    node = Node("k", KernelBody("fill"), (Var("N", I64),))
    graph = Graph("main", (size, out), (node,), bind_ins=(BindIn("N", "k", "N"),),
                  bind_outs=(BindOut("k", "out", "out"),))
    return Module("small", {"fill": kernel}, {"main": graph}, "main")


@pytest.fixture
def registered():
    """Registers passes for one test and removes them afterwards."""
    names = []

    def register(name, fn, options=()):
        register_pass(name, options=options)(fn)
        names.append(name)

    yield register
    for name in names:
        unregister_pass(name)


def drop_functions(module):
    """A deliberately broken pass: the nodes' kernels disappear."""
    return dataclasses.replace(module, functions={})


def rename_module(module, suffix):
    return dataclasses.replace(module, name=module.name + suffix)


def test_run_applies_passes_in_order(registered):
    registered("test-suffix", rename_module, [Option("suffix", str, "_x", "")])
    result = run_pipeline(small_module(), "test-suffix{suffix=_a},test-suffix{suffix=_b}")
    assert result.name == "small_a_b"


def test_run_leaves_the_input_unchanged(registered):
    registered("test-suffix", rename_module, [Option("suffix", str, "_x", "")])
    module = small_module()
    run_pipeline(module, "test-suffix")
    assert module.name == "small"


def test_timings_record_every_pass_in_order():
    manager = PassManager("dce,const-fold,dce")
    manager.run(small_module())
    assert [name for name, _ in manager.timings] == ["dce", "const-fold", "dce"]
    assert all(isinstance(seconds, float) and seconds >= 0 for _, seconds in manager.timings)


def test_pipeline_may_be_given_as_steps():
    manager = PassManager([("inline", {"keep": "true"}), ("dce", {})])
    assert manager.steps == [("inline", {"keep": True}), ("dce", {})]
    assert str(manager) == "inline{keep=true},dce"


def test_steps_with_unknown_option_are_refused():
    with pytest.raises(PipelineError, match="unknown option 'factor' of pass 'dce'"):
        PassManager([("dce", {"factor": 2})])


def test_bad_pipeline_fails_before_running():
    with pytest.raises(PipelineError, match="unknown pass"):
        PassManager("dce,frobnicate")


def test_verify_each_names_the_pass_that_broke_the_module(registered):
    registered("test-break", drop_functions)
    with pytest.raises(VerificationError) as info:
        run_pipeline(small_module(), "dce,test-break,const-fold", verify_each=True)
    message = str(info.value)
    assert "pass 'test-break' produced an invalid module" in message
    assert "fill" in message


def test_without_verify_each_a_broken_module_passes_through(registered):
    registered("test-break", drop_functions)
    result = run_pipeline(small_module(), "test-break")
    assert result.functions == {}


def test_verify_each_reports_an_invalid_input_before_any_pass():
    broken = drop_functions(small_module())
    with pytest.raises(VerificationError, match="before any pass"):
        run_pipeline(broken, "dce", verify_each=True)


def test_verify_each_uses_a_given_verifier(registered):
    registered("test-suffix", rename_module, [Option("suffix", str, "_x", "")])
    calls = []

    def verifier(module):
        calls.append(module.name)
        if module.name.endswith("_x"):
            raise VerificationError(Diagnostic(Location(), "name ends in _x", "rename"))

    manager = PassManager("dce,test-suffix", verify_each=True, verifier=verifier)
    with pytest.raises(VerificationError, match="pass 'test-suffix' produced an invalid "
                                                "module: name ends in _x"):
        manager.run(small_module())
    assert calls == ["small", "small", "small_x"]


def test_pass_returning_something_else_is_an_error(registered):
    registered("test-none", lambda module: None)
    with pytest.raises(PassError, match="pass 'test-none' returned NoneType"):
        run_pipeline(small_module(), "test-none")


def test_exception_in_a_pass_names_the_pass(registered):
    def explode(module):
        raise RuntimeError("boom")

    registered("test-explode", explode)
    with pytest.raises(RuntimeError) as info:
        run_pipeline(small_module(), "test-explode")
    assert "while running pass 'test-explode'" in info.value.__notes__


def test_registering_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        register_pass("dce")(lambda module: module)


def test_list_passes_describes_builtin_passes():
    passes = {info.name: info for info in list_passes()}
    assert {"dce", "const-fold", "inline", "sequentialize", "legalize-tensor-ops"} <= set(passes)
    assert all(info.description for info in passes.values())
    assert [o.name for o in passes["inline"].options] == ["keep"]
    assert passes["inline"].option("keep").type is bool
    assert get_pass("sequentialize").option("nodes").default == ()


def test_option_type_must_be_supported():
    with pytest.raises(ValueError, match="type must be one of"):
        Option("x", dict, {}, "")
