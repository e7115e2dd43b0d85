"""``hpvm run``: run a .hpvm program on a target with inputs from an .npz.

Inputs are checked (readable archive, names, dtypes, shapes) before the
program runs; outputs are written atomically, so an existing output file is
replaced only by a complete new one."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import TargetError
from ..files import check_writable
from ..interp import run_module
from ..npz import read_npz, write_npz
from ..registry import get_registry
from ..runtime import Executable, compile as compile_program
from .ir_commands import load_verified

REFERENCE_TARGET = "interp"


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        description="Run FILE's root graph. Inputs are the arrays of an .npz file "
                    "named after the graph's parameters (numpy.savez(path, name=array)); "
                    "outputs are saved the same way, or printed without --outputs.")
    parser.add_argument("file", metavar="FILE.hpvm|EXE.hpvmx",
                        help="a module (run on --target) or an executable saved by "
                             "`hpvm compile` (run where it was compiled for)")
    parser.add_argument("-t", "--target", default=REFERENCE_TARGET,
                        help=f"target to run on (default: {REFERENCE_TARGET}, the reference "
                             "interpreter); `hpvm targets` lists them")
    parser.add_argument("-i", "--inputs", metavar="IN.npz", help="input arrays")
    parser.add_argument("-o", "--outputs", metavar="OUT.npz", help="where to save the outputs")
    parser.set_defaults(handler=run_program)


def run_program(args) -> int:
    if args.outputs:
        check_writable(args.outputs)
    inputs = read_npz(args.inputs) if args.inputs else {}
    if (Path(args.file) / "executable.json").exists():
        outputs = Executable.load(args.file)(**inputs)
    else:
        outputs = run_on_target(load_verified(args.file), args.target, inputs)
    if args.outputs:
        write_npz(args.outputs, outputs)
    else:
        print_outputs(outputs)
    return 0


def run_on_target(module, target_name: str, inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Outputs of ``module``'s root graph run on target ``target_name``.

    TargetError if the target is unknown or unavailable; ExecutionError if
    the inputs do not fit the program (raised before anything runs)."""
    info = get_registry().target(target_name)
    if not info.availability.available:
        raise TargetError(f"target '{target_name}' is not available: "
                          f"{info.availability.reason}")
    if target_name == REFERENCE_TARGET:
        return run_module(module, inputs)
    return compile_program(module, targets=[target_name])(**inputs)


def print_outputs(outputs: dict[str, np.ndarray]) -> None:
    for name, value in outputs.items():
        value = np.asarray(value)
        print(f"{name}: {value.dtype}{list(value.shape)}")
        print("  " + np.array2string(value, threshold=20, edgeitems=3, prefix="  "))
