"""Errors of the front end: each names the file and line of the offending
Python source, says what is wrong and what to write instead."""
from __future__ import annotations

from ..errors import Diagnostic, DiagnosticError, Location


class FrontendError(DiagnosticError):
    """A Python program cannot be translated to HPVM IR."""


def frontend_error(message: str, fix: str = "", location: Location | None = None,
                   ) -> FrontendError:
    """A FrontendError with one diagnostic (location defaults to nowhere)."""
    return FrontendError(Diagnostic(location or Location(), message, fix))
