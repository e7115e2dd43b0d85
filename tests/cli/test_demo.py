"""``hpvm demo``: the README's first command."""
from hpvm.cli import main


def test_demo_checks_the_interpreter_result(capsys):
    assert main(["demo", "--size", "8x6"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line and not line.startswith("hpvm demo")}
    assert rows["target"] == ["target", "correct", "time", "note"]
    assert rows["interp"][1] == "yes"


def test_demo_lists_unavailable_targets_with_their_reason(capsys):
    main(["demo", "--size", "2x2"])
    [cpu] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("cpu ")]
    assert "not available:" in cpu or cpu.split()[1] == "yes"


def test_demo_saves_a_program_that_run_accepts(tmp_path, capsys):
    assert main(["demo", "--size", "3x4", "--save", str(tmp_path)]) == 0
    outputs = tmp_path / "out.npz"
    assert main(["run", str(tmp_path / "blur.hpvm"), "--inputs", str(tmp_path / "blur_inputs.npz"),
                 "--outputs", str(outputs)]) == 0
    assert outputs.exists()


def test_bad_size_is_a_usage_error(capsys):
    assert main(["demo", "--size", "big"]) == 2
    assert "hpvm: error: argument --size: 'big' is not HxW" in capsys.readouterr().err
