"""``hpvm targets``: what the installed plugins provide and what is usable."""
from __future__ import annotations

from ..options import CORE_OPTIONS
from ..registry import get_registry
from .output import format_table


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "targets",
        description="List every target of the installed plugins, whether its device "
                    "or toolchain is present, and plugins that failed to load.")
    parser.add_argument("--options", action="store_true",
                        help="list each target's compile options instead (name, type, allowed "
                             "values, default, help); pass them as options={name: value} or "
                             "options={target: {name: value}}")
    parser.set_defaults(handler=show_targets)


def show_targets(args) -> int:
    registry = get_registry()
    if args.options:
        rows = [("(hpvm)", option.name, option.describe(), option.help) for option in CORE_OPTIONS]
        rows += [(info.name, option.name, option.describe(), option.help)
                 for info in registry.targets() for option in info.target.options()]
        print(format_table(("target", "option", "type and default", "help"), rows))
        return 0
    rows = [(info.name, info.distribution, info.version or "-",
             "yes" if info.availability.available else "no",
             info.availability.reason or "-")
            for info in registry.targets()]
    print(format_table(("target", "plugin", "version", "available", "reason"), rows))
    failures = registry.failures
    if failures:
        print("\nplugins that failed to load:")
        for failure in failures:
            print(f"  {failure}")
    return 0
