"""``hpvm sdk ...``: the vendor SDK's commands, when hpvm-sdk is installed.

Everything after ``sdk`` goes to ``hpvm_sdk.cli.main``; hpvm itself never
imports hpvm_sdk unless this command runs.
"""
from __future__ import annotations

import argparse
import importlib.util

from ..errors import HpvmError

SDK_PACKAGE = "hpvm_sdk"


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        # Every argument, options included, goes to the SDK (so `hpvm sdk
        # --help` is the SDK's help): no prefix character marks an option here.
        "sdk", add_help=False, prefix_chars="\0",
        description="Vendor SDK commands (hpvm-sdk).")
    parser.add_argument("sdk_args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=run_sdk)


def run_sdk(args) -> int:
    if importlib.util.find_spec(SDK_PACKAGE) is None:
        raise HpvmError("`hpvm sdk` needs the vendor SDK, which is not installed: "
                        "pip install hpvm-sdk (or pip install -e sdk/ in a checkout)")
    from hpvm_sdk.cli import main  # hpvm-sdk (optional)
    return main(args.sdk_args, prog="hpvm sdk")
