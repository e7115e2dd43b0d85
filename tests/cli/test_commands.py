"""The table of commands (hpvm.cli.commands): each command's module is
imported only when that command runs, and the full parser is the same
commands with their own options."""
import argparse
import subprocess
import sys

import pytest

from hpvm.cli import build_parser, command_of
from hpvm.cli.commands import COMMANDS

# What `hpvm --help` must not import: the compiler, the tuner, the front
# ends and the command modules that use them.
HEAVY = ("numpy", "hpvm.runtime", "hpvm.tune", "hpvm.frontend", "hpvm.passes", "hpvm.registry",
         "hpvm.cli.build", "hpvm.cli.tune")


def modules_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint('\\n'.join(sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    return set(result.stdout.split())


def test_help_imports_no_command_module():
    loaded = modules_after("from hpvm.cli import main\nmain(['--help'])")
    assert not [name for name in HEAVY if name in loaded]


def test_import_hpvm_imports_nothing_heavy_until_a_name_is_used():
    assert not [name for name in HEAVY if name in modules_after("import hpvm")]
    assert "hpvm.api" in modules_after("import hpvm\nhpvm.compile")


def test_a_command_imports_its_own_module_only():
    loaded = modules_after("from hpvm.cli import main\nmain(['ir', '--help'])")
    assert "hpvm.cli.ir_commands" in loaded
    assert "hpvm.cli.tune" not in loaded and "hpvm.cli.approx" not in loaded


def command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    subparsers = next(action for action in parser._actions
                      if isinstance(action, argparse._SubParsersAction))
    return subparsers.choices[name]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_its_own_parser_and_handler(name):
    assert command_parser(build_parser(), name).get_default("handler") is not None
    assert command_parser(build_parser([name]), name).get_default("handler") is not None


def test_the_lazy_parser_lists_the_same_commands_as_the_full_one():
    assert build_parser(()).format_help() == build_parser().format_help()


def test_command_of_is_the_first_word_that_is_not_an_option():
    assert command_of(["--version"]) == []
    assert command_of(["compile", "prog.py:f", "--targets", "cpu"]) == ["compile"]
