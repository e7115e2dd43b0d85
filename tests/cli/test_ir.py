"""``hpvm ir``: parse, verify, print canonically; errors locate the problem."""
import dataclasses
import re

from hpvm.cli import main
from hpvm.cli.demo import save_demo
from hpvm.cli.demo_program import blur_module
from hpvm.ir.graph import BindIn
from hpvm.ir.text import print_module


def test_ir_prints_the_canonical_text(tmp_path, capsys):
    program, _ = save_demo(tmp_path, size=(4, 5))
    assert main(["ir", str(program)]) == 0
    assert capsys.readouterr().out == print_module(blur_module()).rstrip("\n") + "\n"


def test_missing_file_is_one_error_line_naming_it(tmp_path, capsys):
    missing = tmp_path / "missing.hpvm"
    assert main(["ir", str(missing)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("hpvm: error: ") and str(missing) in line


def test_parse_error_shows_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.hpvm"
    bad.write_text("hpvm 1.0\nmodule x\n\ngraph @main( {\n")
    assert main(["ir", str(bad)]) == 1
    err = capsys.readouterr().err
    assert re.match(rf"hpvm: error: {re.escape(str(bad))}:4:\d+: ", err)


def test_verification_error_names_the_file_graph_and_node(tmp_path, capsys):
    module = blur_module()
    graph = dataclasses.replace(module.root_graph, bind_ins=(BindIn("image", "nowhere", "image"),))
    broken = dataclasses.replace(module, graphs={"main": graph})
    path = tmp_path / "broken.hpvm"
    path.write_text(print_module(broken))
    assert main(["ir", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"hpvm: error: {path}, graph '@main', node 'nowhere'" in err
    assert "Traceback" not in err
