"""MkDocs hooks: pages generated when the site is built, so they cannot
drift from what they describe.

- reference/cli.md: every ``hpvm`` command's help, from the argparse
  parsers the command itself uses (hpvm.cli and hpvm_sdk.cli);
- reference/vendor-guide.md: the SDK's README (sdk/README.md).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
HELP_WIDTH = "88"


def on_files(files, config):
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "reference/vendor-guide.md",
                                content=(ROOT / "sdk" / "README.md").read_text()))
    return files


def cli_reference() -> str:
    """Markdown: one section per command and subcommand, its --help."""
    from hpvm.cli import build_parser
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps at the terminal's width
    parser = build_parser()
    lines = ["# Command line", "",
             "Generated from `hpvm`'s own parser when the site is built. Every error "
             "is one line, `hpvm: error: ...`, with exit status 1 (2 for a wrong "
             "command line).", ""]
    lines += _section(parser, "hpvm", 2)
    try:  # `hpvm sdk ...` hands its arguments to the SDK's own parser
        from hpvm_sdk.cli import build_parser as sdk_parser
    except ImportError:
        lines += ["`hpvm sdk` commands need hpvm-sdk (pip install hpvm-sdk).", ""]
    else:
        for action in sdk_parser("hpvm sdk")._actions:
            if isinstance(action, argparse._SubParsersAction):
                for command, sub in action.choices.items():
                    lines += _section(sub, f"hpvm sdk {command}", 4)
    return "\n".join(lines) + "\n"


def _section(parser: argparse.ArgumentParser, name: str, level: int) -> list[str]:
    lines = ["#" * level + f" `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for action in parser._actions:  # argparse keeps subcommands here only
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                lines += _section(sub, f"{name} {command}", min(level + 1, 4))
    return lines
