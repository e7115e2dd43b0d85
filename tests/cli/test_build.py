"""``hpvm compile``, ``hpvm plan``, ``hpvm viz`` and running saved executables."""
from pathlib import Path

import numpy as np
import pytest

from hpvm.cli import main
from hpvm.ir.text import load_module

ROOT = Path(__file__).resolve().parents[2]
MATMUL = f"{ROOT / 'examples' / 'matmul.py'}:matmul"
LENET = str(ROOT / "examples" / "ir" / "lenet_tiny.hpvm")


def matmul_inputs(path):
    rng = np.random.default_rng(1)
    a, b = rng.random((4, 3), np.float32), rng.random((3, 5), np.float32)
    np.savez(path, A=a, B=b)
    return a @ b


def test_compile_emits_the_portable_module(tmp_path, capsys):
    out = tmp_path / "mm.hpvm"
    assert main(["compile", MATMUL, "--emit", "ir", "-o", str(out)]) == 0
    assert load_module(out).name == "matmul"


def test_a_compiled_executable_runs_in_hpvm_run(tmp_path, capsys):
    exe = tmp_path / "mm.hpvmx"
    assert main(["compile", MATMUL, "--targets", "cpu", "-o", str(exe)]) == 0
    expected = matmul_inputs(tmp_path / "in.npz")
    assert main(["run", str(exe), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as saved:
        np.testing.assert_allclose(saved["C"], expected, rtol=1e-5)


def test_plan_prints_each_node_with_its_target_and_reason(capsys):
    assert main(["plan", LENET, "--targets", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "@main.conv1" in out and "cpu" in out and "claims" in out


def test_plan_names_the_installed_targets_for_an_unknown_one(capsys):
    assert main(["plan", LENET, "--targets", "tpu"]) == 1
    assert "interp" in capsys.readouterr().err


def test_viz_draws_the_graph_with_the_placement(tmp_path, capsys):
    out = tmp_path / "dfg.svg"
    assert main(["viz", MATMUL, "--targets", "cpu", "-o", str(out)]) == 0
    svg = out.read_text()
    assert svg.startswith("<svg") or "<svg" in svg[:200]
    assert "on cpu" in svg


@pytest.mark.parametrize("source, message", [
    ("nothing", "is not a program"),
    ("missing.py:prog", "missing.py"),
    (f"{ROOT / 'examples' / 'matmul.py'}:nope", "no 'nope'"),
])
def test_bad_sources_are_one_clear_error(tmp_path, capsys, source, message):
    assert main(["compile", source, "-o", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error:") and message in err
    assert not (tmp_path / "x").exists()


def test_compile_options_reach_the_targets(tmp_path, capsys):
    exe = tmp_path / "mm.hpvmx"
    assert main(["compile", MATMUL, "--targets", "cpu", "-O", "threads=2", "-o", str(exe)]) == 0
    import json
    assert json.loads((exe / "executable.json").read_text())["options"] == {"threads": "2"}


@pytest.mark.parametrize("option, message", [
    ("threads=many", "option 'threads' of target 'cpu' expects an int"),
    ("colour=blue", "unknown compile option 'colour'"),
])
def test_a_bad_compile_option_is_one_clear_error(tmp_path, capsys, option, message):
    assert main(["compile", MATMUL, "--targets", "cpu", "-O", option,
                 "-o", str(tmp_path / "x.hpvmx")]) != 0
    assert message in capsys.readouterr().err


def test_an_option_without_a_value_is_refused_by_the_parser(capsys):
    assert main(["plan", LENET, "-O", "threads"]) != 0
    assert "'threads' is not KEY=VALUE" in capsys.readouterr().err
