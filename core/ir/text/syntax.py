"""Spellings shared by the printer and the parser of the ``.hpvm`` text form:
operators and their precedence, reserved words, name and string quoting,
and the canonical spelling of literal values."""
from __future__ import annotations

import math
import re

import numpy as np

from ..types import F64, ScalarType

BINARY_SPELLING = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%",
    "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>",
    "land": "&&", "lor": "||",
}
COMPARE_SPELLING = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
UNARY_SPELLING = {"neg": "-", "not": "!", "bitnot": "~"}

# C precedence: larger binds tighter; every binary operator is left-associative.
PRECEDENCE = {
    "lor": 1, "land": 2, "or": 3, "xor": 4, "and": 5,
    "eq": 6, "ne": 6, "lt": 7, "le": 7, "gt": 7, "ge": 7,
    "shl": 8, "shr": 8, "add": 9, "sub": 9, "mul": 10, "div": 10, "rem": 10,
}
UNARY_PRECEDENCE = 11
PRIMARY_PRECEDENCE = 12

OPERATOR_BY_SPELLING = {s: op for op, s in {**BINARY_SPELLING, **COMPARE_SPELLING}.items()}
UNARY_BY_SPELLING = {s: op for op, s in UNARY_SPELLING.items()}

STATEMENT_KEYWORDS = (
    "let", "for", "if", "else", "while", "return", "barrier", "private", "local",
    "atomic_add", "atomic_min", "atomic_max",
)
RESERVED = frozenset(STATEMENT_KEYWORDS + ("true", "false", "inf", "nan", "const", "graph"))
"""Words that cannot be plain names; a name spelled like one is quoted."""

LOOP_FLAGS = ("ivdep",)
LOOP_OPTIONS = ("unroll", "trip_count")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def is_plain_name(name: str) -> bool:
    """True if ``name`` can be written bare (an identifier, not reserved)."""
    return bool(_IDENTIFIER.match(name)) and name not in RESERVED


def quote_string(text: str) -> str:
    """``text`` as a double-quoted literal: backslash escapes for quotes,
    backslashes and control characters (``\\u{HEX}`` for other unprintables)."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return '"' + "".join(out) + '"'


def format_name(name: str) -> str:
    """A local name (variable, parameter, node, port ...): bare if plain,
    else ``%"quoted"``."""
    return name if is_plain_name(name) else "%" + quote_string(name)


def format_global(name: str) -> str:
    """A function or graph name: ``@name`` or ``@"quoted"``."""
    return "@" + (name if _IDENTIFIER.match(name) else quote_string(name))


def format_float(value: float, type: ScalarType = F64) -> str:
    """The shortest text that reads back as exactly ``value`` in ``type``;
    always has a '.' or an 'e' unless it is inf, -inf or nan."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if type == F64:
        return repr(float(value))
    scalar = type.numpy_dtype.type(value)
    if value == 0 or 1e-4 <= abs(value) < 1e16:
        return np.format_float_positional(scalar, unique=True, trim="0")
    return np.format_float_scientific(scalar, unique=True, trim="-")
