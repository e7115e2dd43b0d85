"""Errors of the pass machinery: a bad pipeline string, or a pass that
cannot transform the module it was given."""
from __future__ import annotations

from ..errors import DiagnosticError, ParseError


class PipelineError(ParseError):
    """The pipeline text names an unknown pass or option, gives a value of
    the wrong type, or breaks the syntax (located by column)."""


class PassError(DiagnosticError):
    """A pass refuses the module (e.g. sequentializing a kernel that uses a
    barrier); the diagnostic names the node or function and the fix."""
