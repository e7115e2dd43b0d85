"""``hpvm sdk``: tools for writing a target (also the ``hpvm-sdk`` command).

    hpvm sdk new-target NAME [-o DIR] [--description TEXT] [--force]
        write a plugin distribution for target NAME (default folder hpvm-NAME)
    hpvm sdk conformance NAME [PYTEST ARGS ...]
        run the conformance kit against the installed target NAME

``main(argv)`` returns the exit code (0 ok, 1 error, 2 wrong command line;
``conformance`` returns pytest's), so tests and ``hpvm``'s own command line
call it directly.  Errors are one line on stderr: ``hpvm sdk: error: ...``.
"""
from __future__ import annotations

import argparse
import sys

from hpvm.errors import HpvmError

PROG = "hpvm sdk"


class _UsageError(Exception):
    def __init__(self, message: str, usage: str):
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and sys.exit(2)
        raise _UsageError(message, self.format_usage())


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(prog=prog, description="Tools for hardware vendors adding an hpvm target.")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    new = commands.add_parser(
        "new-target", help="generate a plugin distribution for a new target",
        description="Write a plugin distribution (pyproject.toml with the hpvm entry point, a "
                    "Target with matcher, code generator and runtime shim that delegate to the "
                    "reference interpreter, tests, README) for the target NAME.")
    new.add_argument("name", metavar="NAME", help="the target's name, e.g. acme_npu")
    new.add_argument("-o", "--output", metavar="DIR", help="folder to write (default: hpvm-NAME)")
    new.add_argument("--description", metavar="TEXT", help="one line describing the device")
    new.add_argument("--force", action="store_true",
                     help="write into a non-empty folder, overwriting the template's files")
    new.set_defaults(handler=_new_target)
    kit = commands.add_parser(
        "conformance", help="run the conformance kit against an installed target",
        description="Run the standard battery (pytest --hpvm-target NAME) and print what the "
                    "target supports.  Further arguments go to pytest (e.g. -x, -k corpus).")
    kit.add_argument("name", metavar="NAME", help="an installed target (see `hpvm targets`)")
    kit.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST ARGS")
    kit.set_defaults(handler=_conformance)
    return parser


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the sdk command line ``argv`` (default: sys.argv[1:])."""
    parser = build_parser(prog)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as done:  # --help ends here
        return done.code or 0
    except _UsageError as err:
        sys.stderr.write(err.usage)
        _report_error(prog, str(err))
        return 2
    try:
        return args.handler(args) or 0
    except HpvmError as err:
        _report_error(prog, str(err))
        return 1
    except OSError as err:
        _report_error(prog, f"{err.filename}: {err.strerror}" if err.filename else str(err))
        return 1


def _report_error(prog: str, message: str) -> None:
    for line in message.splitlines() or [""]:
        print(f"{prog}: error: {line}", file=sys.stderr)


def _new_target(args) -> int:
    from .template import TargetNames, TemplateError, new_target
    names = TargetNames.of(args.name)
    _refuse_installed_name(names.target, TemplateError)
    written = new_target(args.name, args.output, args.description, args.force)
    folder = written[0].parent
    print(f"wrote {len(written)} files for target '{names.target}' into {folder}:")
    for path in written:
        print(f"  {path.relative_to(folder)}")
    steps = [(f"pip install -e {folder}[test]", ""),
             ("hpvm targets", f"lists '{names.target}'"),
             (f"pytest --hpvm-target {names.target}", "the conformance kit")]
    width = max(len(step) for step, _ in steps)
    print("next:")
    for step, note in steps:
        print(f"  {step:<{width}}  # {note}" if note else f"  {step}")
    return 0


def _refuse_installed_name(name: str, error) -> None:
    from hpvm.registry import get_registry
    for info in get_registry().targets():
        if info.name == name:
            raise error(f"a target named '{name}' is already installed (from "
                        f"{info.distribution}): choose another name")


def _conformance(args) -> int:
    from .conformance import run
    return run(args.name, *args.pytest_args, capture=False).returncode
