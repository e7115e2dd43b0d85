"""The ``hpvm`` command.

    hpvm targets                       installed targets and why some are unusable
    hpvm ir FILE.hpvm                  parse, verify, print the canonical text
    hpvm passes                        the passes ``opt`` accepts, with options
    hpvm opt FILE.hpvm -p PIPELINE     run passes, print or save the result
    hpvm compile SOURCE [--emit ir|exe] --targets A,B [--config BEST.json] -o OUT
                                       SOURCE: prog.py:NAME, FILE.hpvm, MODEL.onnx or MODEL.keras
    hpvm plan SOURCE --targets A,B     which target runs each node, and why
    hpvm viz SOURCE -o dfg.svg         draw the dataflow graph
    hpvm run FILE.hpvm|EXE.hpvmx --inputs in.npz --outputs out.npz [--target NAME]
    hpvm tune SOURCE --targets A,B --inputs in.npz --budget N [-o RECORD] [--config-out BEST]
                                       design-space exploration (HyperMapper)
    hpvm tune --refine EXE.hpvmx       re-measure a shipped approximation curve here
    hpvm approx SOURCE --qos accuracy --loss 1 --data calib.npz --targets A,B [-o EXE]
                                       approximation tuning (ApproxTuner)
    hpvm demo                          blur an image on every target, check it
    hpvm sdk new-target NAME | conformance NAME   vendor SDK (needs hpvm-sdk)

Every error is one line on stderr starting ``hpvm: error:``; the exit code is
1 for errors and 2 for a wrong command line.  ``main(argv)`` returns the exit
code, so tests call it directly.  Each command lives in a module of its own,
imported only when it runs (commands.py lists them).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Iterable

from ..errors import DiagnosticError, HpvmError
from ..version import __version__
from .commands import COMMANDS, Subcommands

PROG = "hpvm"


class UsageError(Exception):
    """A wrong command line (argparse's complaint)."""

    def __init__(self, message: str, usage: str):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and sys.exit(2)
        raise UsageError(message, self.format_usage())


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The parser of the ``hpvm`` command line, with the own parsers
    (options, handler) of ``commands`` and of the others of their modules
    (every command's when None); any other command is only its name and
    line, so its module is not imported (hpvm.cli.commands)."""
    parser = _Parser(prog=PROG, description="HPVM: one dataflow-graph IR, many targets.")
    parser.add_argument("--version", action="version", version=f"hpvm {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    wanted = {COMMANDS[name][0] for name in (COMMANDS if commands is None else commands)
              if name in COMMANDS}
    added = set()
    for name, (module, line) in COMMANDS.items():
        if module not in wanted:
            subparsers.add_parser(name, help=line)
        elif module not in added:
            added.add(module)
            importlib.import_module(f"{__name__}.{module}").add_parsers(Subcommands(subparsers))
    return parser


def command_of(argv: list[str]) -> list[str]:
    """The command ``argv`` names (its first word that is not an option), as
    a list of none or one."""
    return [word for word in argv if not word.startswith("-")][:1]


TRACEBACK_VARIABLE = "HPVM_TRACEBACK"


def main(argv: list[str] | None = None) -> int:
    """Run the ``hpvm`` command line ``argv`` (default: sys.argv[1:])."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(command_of(argv)).parse_args(argv)
    except SystemExit as done:  # --help and --version end here
        return done.code or 0
    except UsageError as err:
        sys.stderr.write(err.usage)
        report_error(str(err))
        return 2
    try:
        return args.handler(args) or 0
    except DiagnosticError as err:
        for diagnostic in err.diagnostics:
            report_error(str(diagnostic))
        return 1
    except HpvmError as err:
        report_error(str(err))
        return 1
    except BrokenPipeError:
        _silence_stdout()  # the reader left (`hpvm ... | head`): not an error
        return 141
    except OSError as err:
        report_error(describe_os_error(err))
        return 1
    except KeyboardInterrupt:
        report_error("interrupted")
        return 130
    except MemoryError:
        report_error("out of memory (fix: use smaller sizes, or set $HPVM_MEMORY_LIMIT "
                     "to have sizes checked against a lower limit before anything runs)")
        return 1
    except RecursionError:
        report_error("the input nests too deeply for hpvm to process (fix: split deep "
                     "expressions or graphs into smaller pieces)")
        return 1
    except Exception as err:  # a bug in hpvm or in a plugin: still no traceback
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        report_error(f"internal error: {type(err).__name__}: {err} (this is a bug in hpvm or "
                     f"one of its plugins: please report it with the command that caused it; "
                     f"set {TRACEBACK_VARIABLE}=1 to see where it happened)")
        return 70


def report_error(message: str) -> None:
    """Print ``message`` as ``hpvm: error: ...`` lines on stderr."""
    for line in message.splitlines() or [""]:
        print(f"{PROG}: error: {line}", file=sys.stderr)


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def describe_os_error(err: OSError) -> str:
    """``path: reason`` for file errors, without Python's errno decoration."""
    if err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return err.strerror or str(err)

