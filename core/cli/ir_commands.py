"""``hpvm ir``, ``hpvm passes``, ``hpvm opt``: the IR text and its passes."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..errors import DiagnosticError
from ..files import check_writable, write_text_atomically
from ..ir.text import load_module, print_module
from ..ir.verify import verify
from ..passes import PassManager, list_passes
from ..registry import get_registry
from .output import format_table


def add_parsers(subparsers) -> None:
    ir = subparsers.add_parser(
        "ir",
        description="Parse FILE, verify it, and print the module in canonical form.")
    ir.add_argument("file", metavar="FILE.hpvm")
    ir.set_defaults(handler=show_ir)

    passes = subparsers.add_parser(
        "passes",
        description="List every registered pass (core and plugins) with its options.")
    passes.set_defaults(handler=show_passes)

    opt = subparsers.add_parser(
        "opt",
        description="Run PIPELINE over FILE and print (or save) the result. "
                    "A pipeline is a comma-separated list of passes with options "
                    "in braces: 'inline,const-fold,dce'.")
    opt.add_argument("file", metavar="FILE.hpvm")
    opt.add_argument("-p", "--pipeline", required=True, help="passes to run, in order")
    opt.add_argument("-o", "--output", metavar="OUT.hpvm",
                     help="write the result here instead of printing it")
    opt.add_argument("--verify-each", action="store_true",
                     help="verify the module after every pass")
    opt.add_argument("--time-passes", action="store_true",
                     help="print how long each pass took (on stderr)")
    opt.set_defaults(handler=optimize)


def load_verified(path: str | Path):
    """The module in ``path``, parsed and verified; errors name the file."""
    try:
        module = load_module(path)
        verify(module)
    except DiagnosticError as err:
        raise _with_file(err, str(path)) from None
    return module


def _with_file(err: DiagnosticError, path: str) -> DiagnosticError:
    """``err`` with ``path`` as the file of diagnostics that name none."""
    if all(d.location.file is not None for d in err.diagnostics):
        return err
    diagnostics = [d if d.location.file is not None else dataclasses.replace(
        d, location=dataclasses.replace(d.location, file=path)) for d in err.diagnostics]
    return type(err)(diagnostics)


def module_text(module) -> str:
    text = print_module(module)
    return text if text.endswith("\n") else text + "\n"


def show_ir(args) -> int:
    sys.stdout.write(module_text(load_verified(args.file)))
    return 0


def show_passes(args) -> int:
    get_registry().load_passes()
    rows = [(info.name, _format_options(info.options), info.description or "-")
            for info in list_passes()]
    print(format_table(("pass", "options", "description"), rows))
    return 0


def _format_options(options) -> str:
    if not options:
        return "-"
    return ", ".join(f"{o.name}: {o.type_name} = {o.default!r}" for o in options)


def optimize(args) -> int:
    get_registry().load_passes()
    manager = PassManager(args.pipeline, verify_each=args.verify_each)
    if args.output:
        check_writable(args.output)
    result = manager.run(load_verified(args.file))
    text = module_text(result)
    if args.output:
        write_text_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if args.time_passes:
        _print_timings(manager.timings)
    return 0


def _print_timings(timings: list[tuple[str, float]]) -> None:
    rows = [(name, f"{seconds * 1e3:.3f}") for name, seconds in timings]
    rows.append(("total", f"{sum(s for _, s in timings) * 1e3:.3f}"))
    print(format_table(("pass", "ms"), rows), file=sys.stderr)
