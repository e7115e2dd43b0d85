"""``hpvm sdk ...`` through hpvm's own command line."""
import importlib.util

from hpvm.cli import main


def test_new_target_writes_the_plugin_and_says_what_to_do_next(tmp_path, capsys):
    assert main(["sdk", "new-target", "acme_npu", "-o", str(tmp_path / "plugin")]) == 0
    out = capsys.readouterr().out
    assert "wrote 10 files for target 'acme_npu'" in out
    assert "pytest --hpvm-target acme_npu" in out
    assert (tmp_path / "plugin" / "hpvm_acme_npu" / "target.py").exists()


def test_new_target_writes_hpvm_dash_name_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sdk", "new-target", "acme"]) == 0
    assert (tmp_path / "hpvm-acme" / "pyproject.toml").exists()


def test_a_bad_target_name_is_one_error_line(capsys):
    assert main(["sdk", "new-target", "Acme-NPU"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm sdk: error: 'Acme-NPU' cannot name a target")
    assert len(err.splitlines()) == 1


def test_the_name_of_an_installed_target_is_refused(tmp_path, capsys):
    assert main(["sdk", "new-target", "interp", "-o", str(tmp_path / "x")]) == 1
    assert "already installed (from hpvm)" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_missing_sdk_command_is_a_usage_error(capsys):
    assert main(["sdk"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hpvm sdk")
    assert "hpvm sdk: error: the following arguments are required: COMMAND" in err


def test_sdk_help_is_the_sdk_s_own(capsys):
    assert main(["sdk", "--help"]) == 0
    out = capsys.readouterr().out
    assert "new-target" in out and "conformance" in out


def test_without_hpvm_sdk_the_command_says_how_to_install_it(monkeypatch, capsys):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "hpvm_sdk" else find_spec(name, *a))
    assert main(["sdk", "new-target", "acme"]) == 1
    assert "pip install hpvm-sdk" in capsys.readouterr().err


def test_importing_hpvm_does_not_import_the_sdk():
    import subprocess
    import sys
    code = "import sys, hpvm, hpvm.cli, hpvm.registry; print('hpvm_sdk' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
