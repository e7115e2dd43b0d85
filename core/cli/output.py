"""Writing results: aligned text tables, files replaced atomically, and a
one-line progress bar."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable, Sequence

from ..errors import HpvmError


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows under headers, columns left-aligned; the last column is not padded."""
    cells = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


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
    write_atomically(path, lambda handle: handle.write(text.encode()))


def _mode_for(path: Path) -> int:
    # mkstemp makes 0600 files; keep the mode a plain open() would give.
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream or sys.stderr

    def step(self, label: str) -> None:
        """Draw the bar with ``label``, then count one step done."""
        filled = self.width * self.done // self.total
        bar = "#" * filled + "." * (self.width - filled)
        end = "\r" if self.stream.isatty() else "\n"
        self.stream.write(f"[{bar}] {self.done}/{self.total} {label:<40.40}{end}")
        self.stream.flush()
        self.done += 1

    def close(self) -> None:
        self.stream.write(f"[{'#' * self.width}] {self.total}/{self.total} done{' ' * 36}\n")
        self.stream.flush()
