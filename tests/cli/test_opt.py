"""``hpvm passes`` and ``hpvm opt``."""
from hpvm.cli import main
from hpvm.cli.demo import save_demo
from hpvm.ir.text import load_module


def test_passes_lists_core_passes_with_options(capsys):
    assert main(["passes"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert {"dce", "const-fold", "inline", "sequentialize", "legalize-tensor-ops"} <= set(rows)
    assert "keep: bool = False" in rows["inline"]


def test_opt_prints_the_optimized_module(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    assert main(["opt", str(program), "-p", "inline,const-fold,dce", "--verify-each"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("hpvm ") and "graph @main" in out


def test_opt_writes_output_file_that_parses(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    result = tmp_path / "opt.hpvm"
    assert main(["opt", str(program), "-p", "dce", "-o", str(result)]) == 0
    assert capsys.readouterr().out == ""
    assert load_module(result).root == "main"


def test_time_passes_reports_each_pass_on_stderr(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    main(["opt", str(program), "-p", "const-fold,dce", "--time-passes"])
    err = capsys.readouterr().err.splitlines()
    assert [line.split()[0] for line in err] == ["pass", "const-fold", "dce", "total"]


def test_unknown_pass_is_an_error_with_a_suggestion(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    assert main(["opt", str(program), "-p", "inlinee"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error: ") and "unknown pass 'inlinee'" in err
    assert "did you mean 'inline'?" in err


def test_failed_opt_leaves_existing_output_untouched(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    result = tmp_path / "opt.hpvm"
    result.write_text("previous")
    assert main(["opt", str(program), "-p", "nosuchpass", "-o", str(result)]) == 1
    assert result.read_text() == "previous"
