"""Errors that speak to the user: each names where the problem is and how
to fix it."""
from __future__ import annotations

from dataclasses import dataclass


class HpvmError(Exception):
    """Base of every error hpvm reports to a user."""


@dataclass(frozen=True)
class Location:
    """Where in a program a problem is: any of graph, node, port (a node's
    or graph's parameter), function; or a file position."""

    graph: str | None = None
    node: str | None = None
    port: str | None = None
    function: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            pos = self.file
            if self.line is not None:
                pos += f":{self.line}"
                if self.column is not None:
                    pos += f":{self.column}"
            parts.append(pos)
        if self.graph is not None:
            parts.append(f"graph '@{self.graph}'")
        if self.node is not None:
            parts.append(f"node '{self.node}'")
        if self.function is not None:
            parts.append(f"function '@{self.function}'")
        if self.port is not None:
            parts.append(f"parameter '{self.port}'")
        return ", ".join(parts)


@dataclass(frozen=True)
class Diagnostic:
    """One problem: where, what, and the fix."""

    location: Location
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = str(self.location)
        text = f"{where}: {self.message}" if where else self.message
        return f"{text} (fix: {self.fix})" if self.fix else text


class DiagnosticError(HpvmError):
    """An error carrying one or more diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class VerificationError(DiagnosticError):
    """The module breaks an IR rule."""


class ParseError(DiagnosticError):
    """The text is not a valid ``.hpvm`` module (located by line/column)."""


class ExecutionError(DiagnosticError):
    """Running a program failed (bad inputs, out-of-range access ...)."""


class TargetError(HpvmError):
    """A target is unknown, unavailable, or failed to compile or run."""
