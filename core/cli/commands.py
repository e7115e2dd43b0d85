"""The commands of ``hpvm``: for each, the module of hpvm.cli that adds its
parser and runs it, and the line ``hpvm --help`` shows for it.

A command's module is imported only when that command runs or its help is
asked for (hpvm.cli.build_parser), so ``hpvm --help`` and each command
start without importing what the other commands use (the tuner, the front
ends, the approximation tuner ...).
"""
from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "targets": ("targets", "list installed targets and whether they can be used"),
    "ir": ("ir_commands", "parse and verify a .hpvm file, print its canonical text"),
    "passes": ("ir_commands", "list the passes `hpvm opt` accepts, with their options"),
    "opt": ("ir_commands", "run a pass pipeline over a .hpvm file"),
    "compile": ("build", "compile a program to a .hpvm module or a saved executable"),
    "plan": ("build", "print which target runs each node"),
    "viz": ("build", "draw the dataflow graph as SVG"),
    "run": ("run", "run a .hpvm program on inputs from an .npz file"),
    "tune": ("tune", "tune a program's passes, placement and target knobs"),
    "approx": ("approx", "tune approximation knobs of tensor ops under a QoS goal"),
    "demo": ("demo", "run the edge-detection example on every target and check it"),
    "sdk": ("sdk", "tools for writing a target: new-target, conformance (needs hpvm-sdk)"),
}
"""Command -> (its module in hpvm.cli, its line in ``hpvm --help``), in
the order ``hpvm --help`` lists them; a module's commands stand together."""


class Subcommands:
    """argparse's subparsers as a command module sees them: ``add_parser``
    fills in the command's line from COMMANDS."""

    def __init__(self, subparsers):
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs):
        return self._subparsers.add_parser(name, help=COMMANDS[name][1], **kwargs)
