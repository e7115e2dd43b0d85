"""Reading and writing ``.npz`` files of named arrays, the form a program's
inputs and outputs take on disk (``numpy.savez``): a file read is checked
(an archive of named arrays, each small enough for memory, judged from its
header before anything is allocated); a file written is replaced whole."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from .errors import Diagnostic, ExecutionError, Location
from .files import write_atomically
from .ir.shapes import check_allocation

ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"


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
