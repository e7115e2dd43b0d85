"""What the command prints: aligned text tables and a one-line progress
bar.  (Files it writes are written by hpvm.files.)"""
from __future__ import annotations

import sys
from typing import Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows under headers, columns left-aligned; the last column is not padded."""
    cells = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


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
