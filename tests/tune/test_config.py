"""Tuned configurations: hpvm.compile(config=...) applies one (passes,
placement, options), a saved executable carries it, and a configuration
for another program or other targets, an unknown parameter or a damaged
file is an error that says what to do."""
import json
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.interp import Interpreter
from hpvm.ir.text import parse_module
from hpvm.runtime import Executable
from hpvm.tune import TuneError, TuningConfig, module_digest

CHAIN = (Path(__file__).parent / "chain.hpvm").read_text()
INPUTS = {"a": np.linspace(-3, 3, 40, dtype=np.float32), "bias": np.array([0.5, -1, 0.25], np.float32)}


def config_for(module, values, targets=("cpu",)):
    return TuningConfig(module_digest(module), list(targets), values)


def test_compile_applies_the_configuration_and_saves_it(tmp_path):
    module = parse_module(CHAIN)
    config = config_for(module, {"fuse scale:offset": True, "fuse offset:clamp": True,
                                 "cpu.lanes": 4})
    exe = hpvm.compile(module, config=config.to_json())
    assert list(exe.placement.targets) == ["@main.scale_offset_clamp"]
    assert exe.options["cpu"] == {"lanes": 4, "rows": 1}
    assert any("tuned configuration applied" in note for note in exe.placement.notes)
    expected = Interpreter(module).run(**INPUTS)
    np.testing.assert_allclose(exe(**INPUTS)["c"], expected["c"], rtol=1e-6)
    exe.save(tmp_path / "exe")
    loaded = Executable.load(tmp_path / "exe")
    assert loaded.config == config.to_json()
    np.testing.assert_allclose(loaded(**INPUTS)["c"], expected["c"], rtol=1e-6)


def test_a_configuration_file_round_trips(tmp_path):
    module = parse_module(CHAIN)
    config = config_for(module, {"unroll offset.k": 3})
    config.save(tmp_path / "best.json")
    assert TuningConfig.load(tmp_path / "best.json") == config
    exe = hpvm.compile(module, config=tmp_path / "best.json")
    assert "loop-unroll" in exe.placement.notes[-1]


def test_a_configuration_for_another_program_is_refused():
    other = parse_module(CHAIN.replace("f32(2.0)", "f32(3.0)"))
    config = config_for(other, {})
    with pytest.raises(TuneError, match="made for another program.*fix: tune this program"):
        hpvm.compile(parse_module(CHAIN), config=config)


def test_a_configuration_for_other_targets_is_refused():
    module = parse_module(CHAIN)
    with pytest.raises(TuneError, match="tuned for targets cpu, not interp"):
        hpvm.compile(module, ["interp"], config=config_for(module, {}))


def test_an_unknown_parameter_is_refused_with_the_valid_ones():
    module = parse_module(CHAIN)
    with pytest.raises(TuneError, match="no parameter 'fuse x:y'.*'fuse scale:offset'"):
        hpvm.compile(module, config=config_for(module, {"fuse x:y": True}))


@pytest.mark.parametrize("text, message", [
    ("{not json", "not JSON"),
    ('{"format": "something-else"}', "not a tuning configuration"),
    ('{"format": "hpvm-tune-config/1", "module": 3, "targets": [], "values": {}}',
     "'module' must be a str"),
])
def test_damaged_configuration_files_are_refused(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TuneError, match=message):
        hpvm.compile(parse_module(CHAIN), config=path)


def test_user_options_override_the_configuration():
    module = parse_module(CHAIN)
    exe = hpvm.compile(module, config=config_for(module, {"cpu.lanes": 4}),
                       options={"cpu": {"lanes": 8}})
    assert exe.options["cpu"]["lanes"] == 8
