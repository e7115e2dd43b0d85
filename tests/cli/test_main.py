"""The command line as a whole: usage errors, version, the console script."""
import subprocess
import sys
from pathlib import Path

from hpvm import __version__
from hpvm.cli import main


def test_unknown_command_is_a_usage_error_with_exit_code_2(capsys):
    assert main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: hpvm")
    assert "hpvm: error: argument COMMAND: invalid choice: 'bogus'" in err


def test_missing_command_is_a_usage_error(capsys):
    assert main([]) == 2
    assert "hpvm: error: the following arguments are required: COMMAND" in capsys.readouterr().err


def test_missing_required_option_is_a_usage_error(capsys):
    assert main(["opt", "x.hpvm"]) == 2
    assert "hpvm: error: the following arguments are required: -p/--pipeline" in capsys.readouterr().err


def test_version_is_printed(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hpvm {__version__}"


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(command in out for command in ("targets", "ir", "passes", "opt", "run", "demo"))


def test_console_script_reports_errors_in_one_line_without_traceback(tmp_path):
    script = Path(sys.executable).with_name("hpvm")
    result = subprocess.run([str(script), "ir", str(tmp_path / "missing.hpvm")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith("hpvm: error: ")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
