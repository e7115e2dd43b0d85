"""``hpvm targets``: every installed target and every failed plugin."""
import pytest

import hpvm
from hpvm import registry as registry_module
from hpvm.cli import main
from hpvm.registry import Registry
from hpvm.target import Availability, Target

INSTALLED = ["aten", "cpu", "fixedfunc", "fpga_aoc", "gpu_opencl", "interp", "movidius", "nvdla"]


def test_targets_lists_interp_and_the_seven_plugin_targets(capsys):
    assert main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["target", "plugin", "version", "available", "reason"]
    assert sorted(line.split()[0] for line in lines[1:9]) == INSTALLED


def test_targets_shows_the_reason_a_target_is_unavailable(capsys):
    main(["targets"])
    [cpu] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("cpu ")]
    assert "hpvm-cpu" in cpu


def test_targets_options_lists_each_declared_option_with_type_default_and_help(capsys):
    assert main(["targets", "--options"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["target", "option", "type"]
    [threads] = [line for line in lines if line.split()[:2] == ["cpu", "threads"]]
    assert "int (1 <= value), default None" in threads and "None: every core" in threads


@pytest.fixture
def fake_registry(monkeypatch):
    """A registry of one unusable target and one broken plugin, used by
    every command through hpvm.registry.get_registry()."""
    class Missing(Target):
        name = "missing"

        def availability(self):
            return Availability.no("libvendor.so not found")

    class Plugin:
        @hpvm.hookimpl
        def hpvm_targets(self):
            return [Missing()]

    class Broken:
        name = "broken"
        dist = None

        def load(self):
            raise ImportError("No module named 'vendor_sdk'")

    registry = Registry(entry_points=[Broken()])
    registry.register(Plugin(), name="missing", distribution="hpvm-missing", version="2.0")
    monkeypatch.setattr(registry_module, "_registry", registry)
    return registry


def test_targets_lists_failed_plugins_with_their_reason(fake_registry, capsys):
    assert main(["targets"]) == 0
    out = capsys.readouterr().out
    assert "plugins that failed to load:" in out
    assert "plugin 'broken' (broken): ImportError: No module named 'vendor_sdk'" in out


def test_targets_marks_unavailable_target_with_reason(fake_registry, capsys):
    main(["targets"])
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("missing")]
    assert row.split()[:4] == ["missing", "hpvm-missing", "2.0", "no"]
    assert row.endswith("libvendor.so not found")
