"""Writing files safely: a file is created or replaced whole (never left
half-written, an existing one untouched on error), after checking that its
folder exists before long work starts."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

from .errors import HpvmError


def check_writable(path: str | Path) -> Path:
    """``path`` if its folder exists; HpvmError otherwise (checked before
    long work so a typo does not cost a run)."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise HpvmError(f"cannot write '{path}': folder '{folder}' does not exist")
    if path.is_dir():
        raise HpvmError(f"cannot write '{path}': it is a folder")
    return path


def write_atomically(path: str | Path, write: Callable[[BinaryIO], None]) -> None:
    """Create or replace ``path`` with what ``write(handle)`` writes.

    The data goes to a temporary file in the same folder that is renamed
    over ``path`` only once complete: readers never see a half-written
    file, and on any error an existing ``path`` is left untouched."""
    path = check_writable(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                             suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_text_atomically(path: str | Path, text: str) -> None:
    """Create or replace ``path`` with ``text`` (UTF-8), atomically."""
    write_atomically(path, lambda handle: handle.write(text.encode()))


def _mode_for(path: Path) -> int:
    # mkstemp makes 0600 files; keep the mode a plain open() would give.
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
