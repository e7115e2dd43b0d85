"""``hpvm run``: run a .hpvm program on a target with inputs from an .npz.

Inputs are checked (readable archive, names, dtypes, shapes) before the
program runs; outputs are written atomically, so an existing output file is
replaced only by a complete new one."""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Diagnostic, ExecutionError, Location, TargetError
from .ir_commands import load_verified
from .output import check_writable, write_atomically

REFERENCE_TARGET = "interp"
ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="run a .hpvm program on inputs from an .npz file",
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
        from ..runtime import Executable
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
    from ..registry import get_registry
    info = get_registry().target(target_name)
    if not info.availability.available:
        raise TargetError(f"target '{target_name}' is not available: "
                          f"{info.availability.reason}")
    if target_name == REFERENCE_TARGET:
        from ..interp import run_module
        return run_module(module, inputs)
    from ..runtime import compile as compile_program
    return compile_program(module, targets=[target_name])(**inputs)


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of the .npz file ``path``; ExecutionError naming the file
    if it is not a readable numpy archive of named arrays."""
    path = str(path)
    with open(path, "rb") as handle:
        magic = handle.read(len(NPY_MAGIC))
    if magic.startswith(NPY_MAGIC):
        raise _bad_npz(path, "it holds one unnamed array (.npy), not named arrays")
    if not magic.startswith(ZIP_MAGIC):
        raise _bad_npz(path, "it is not an .npz archive")
    try:
        _check_array_sizes(path)
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise _bad_npz(path, str(err)) from None


def _check_array_sizes(path: str) -> None:
    """Read every array's header (shape and dtype) and refuse one larger
    than memory before numpy allocates it."""
    from ..ir.shapes import check_allocation
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(handle)
            check_allocation(shape, dtype.itemsize, Location(file=path, port=member[:-4]),
                             f"input array '{member[:-4]}'")


def _bad_npz(path: str, why: str) -> ExecutionError:
    return ExecutionError(Diagnostic(
        Location(file=path), f"cannot read the inputs: {why}",
        "save them with numpy.savez(path, name=array, ...)"))


def write_npz(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Save ``arrays`` to ``path`` as an .npz file, atomically."""
    write_atomically(path, lambda handle: np.savez(handle, **arrays))


def print_outputs(outputs: dict[str, np.ndarray]) -> None:
    for name, value in outputs.items():
        value = np.asarray(value)
        print(f"{name}: {value.dtype}{list(value.shape)}")
        print("  " + np.array2string(value, threshold=20, edgeitems=3, prefix="  "))
