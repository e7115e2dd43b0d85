"""Compile options are declared (hpvm.options): a key no listed target
declares, or a value its declaration refuses, is an error naming the
target and the valid choices; each target receives only its own."""
from pathlib import Path

import pytest

import hpvm
from hpvm.options import Option, OptionError, resolve_compile_options
from hpvm.registry import get_registry

MATMUL = Path(__file__).resolve().parents[1] / "examples" / "ir" / "matmul.hpvm"


@pytest.mark.parametrize("options, message", [
    ({"bogus": 1}, r"unknown compile option 'bogus' \(fix: use one of .*opt_level.* \(cpu\)"),
    ({"cpu": {"bogus": 1}}, r"target 'cpu' has no option 'bogus' \(fix: use one of .*threads"),
    ({"precision": "fp99"}, r"unknown compile option 'precision'"),
    ({"threads": -3}, r"option 'threads' of target 'cpu' expects an int of at least 1, got -3"),
    ({"cpu": {"opt_level": "fast"}}, r"option 'opt_level' of target 'cpu' expects an int, got 'fast'"),
    ({"cpu": 4}, r"compile option 'cpu' names a target, so it takes a dict"),
])
def test_bad_compile_options_are_refused_before_anything_compiles(options, message):
    with pytest.raises(OptionError, match=message):
        hpvm.compile(MATMUL, targets=["cpu"], options=options)


def test_a_value_outside_the_choices_names_them():
    pytest.importorskip("torch")
    with pytest.raises(OptionError, match="expects one of 'fp32', 'float32', 'fp16', 'float16', 'tf32', "
                                          "got 'fp99'"):
        hpvm.compile(MATMUL, targets=["aten", "cpu"], options={"precision": "fp99"})


def test_each_target_receives_only_the_options_it_declares():
    registry = get_registry()
    resolved = resolve_compile_options(
        {"threads": 2, "cpu": {"lanes": 0}, "interp": {}}, ["cpu", "interp"], registry)
    assert resolved == {"cpu": {"threads": 2, "lanes": 0}, "interp": {}}


def test_a_section_option_reaches_the_target_and_the_program_runs():
    import numpy as np
    exe = hpvm.compile(MATMUL, targets=["cpu"], options={"cpu": {"threads": 1, "lanes": "0"}})
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(exe(a=a, b=b)["c"], a @ b)


@pytest.mark.parametrize("option, value, converted", [
    (Option("n", int, 3, minimum=0, maximum=3), "2", 2),
    (Option("n", int, None, minimum=1), None, None),
    (Option("flag", bool, False), "yes", True),
    (Option("names", list, ()), "a, b", ("a", "b")),
    (Option("mode", str, "copy", choices=("copy", "map")), "map", "map"),
])
def test_options_convert_text_and_values(option, value, converted):
    assert option.convert(value) == converted


def test_every_installed_target_declares_well_formed_options():
    for info in get_registry().targets():
        for option in info.target.options():
            assert isinstance(option, Option) and option.help, (info.name, option)
            if option.default is not None and option.type is not object:
                assert option.convert(option.default) == option.default, (info.name, option.name)


def test_the_pipeline_option_runs_passes_before_placement():
    from hpvm.frontend.compile import compile_program
    module = compile_program(f"{Path(__file__).resolve().parents[1] / 'examples' / 'edge_detection.py'}"
                             ":edge_detect")
    import numpy as np
    from hpvm.interp import Interpreter
    from hpvm.testing import assert_outputs_close, random_inputs
    inputs = random_inputs(module.root_graph, {"H": 9, "W": 11})
    expected = Interpreter(module).run(**inputs)
    for pipeline in ("node-fusion,dce", "default"):
        exe = hpvm.compile(module, targets=["cpu"], options={"pipeline": pipeline})
        assert "@edge_detect.sobel_y_sobel_x_magnitude" in exe.placement.targets
        assert_outputs_close(exe(**inputs), expected, 1e-5, 1e-5, pipeline)
    plain = hpvm.compile(module, targets=["cpu"])
    assert "@edge_detect.magnitude" in plain.placement.targets
    assert np.isfinite(plain(**inputs)["edges"]).all()


def test_the_default_pipeline_is_the_first_listed_targets():
    registry = get_registry()
    assert registry.target("cpu").target.default_pipeline == \
        "node-fusion,copy-propagation,scratch-expansion,task-split,loop-instances{reused=true}," \
        "loop-instances{outward=true},loop-interchange,loop-tile,loop-instances,loop-jam,dce"
    assert registry.target("interp").target.default_pipeline == ""


def test_the_cpu_runs_its_default_pipeline_for_its_cores():
    """Nests walking rows whose columns share nothing run in one strip of
    columns a core (strip_instances.py): as many as the threads option
    gives."""
    import numpy as np
    from hpvm.ir.text import print_module
    from benchmarks import polybench
    cpu = get_registry().target("cpu").target
    pipeline = cpu.pipeline_for({"threads": 3})
    assert "loop-instances{outward=true cores=3}" in pipeline      # as written
    assert ",loop-tile,task-split{cores=3},loop-instances{cores=3}," in pipeline  # after it
    inputs = polybench.inputs_for("atax", np.random.default_rng(0), 600, 600)
    exe = hpvm.compile(polybench.FORMS["atax"], targets=["cpu"],
                       options={"pipeline": "default", "threads": 2})
    assert "node atax_2 = @atax_2_instances [max((N + max(256, (N + 31) / 32 * 16) - 1)" \
        in print_module(exe.module)
    for port, want in polybench.reference("atax", inputs).items():
        np.testing.assert_allclose(exe(**inputs)[port], want, rtol=1e-4, atol=1e-3)


def test_a_bad_pipeline_is_refused_naming_the_pass():
    from hpvm.passes import PipelineError
    with pytest.raises(PipelineError, match="unknown pass 'node-fusoin'.*did you mean 'node-fusion'"):
        hpvm.compile(MATMUL, targets=["cpu"], options={"pipeline": "node-fusoin"})
    with pytest.raises(OptionError, match="option 'pipeline' of hpvm expects a str, got 3"):
        hpvm.compile(MATMUL, targets=["cpu"], options={"pipeline": 3})
