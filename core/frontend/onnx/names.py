"""Names and element types: ONNX's free-form names made into IR
identifiers, and ONNX element types mapped to IR scalar types."""
from __future__ import annotations

import re

from ...ir.types import (
    BF16, BOOL, F4E2M1, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F16, F32, F64, I2, I4, I8,
    I16, I32, I64, U2, U4, U8, U16, U32, U64, ScalarType,
)

# onnx.TensorProto.DataType values (stable across onnx releases).
ELEMENT_TYPES: dict[int, ScalarType] = {
    1: F32, 2: U8, 3: I8, 4: U16, 5: I16, 6: I32, 7: I64, 9: BOOL, 10: F16,
    11: F64, 12: U32, 13: U64, 16: BF16, 17: F8E4M3FN, 18: F8E4M3FNUZ, 19: F8E5M2,
    20: F8E5M2FNUZ, 21: U4, 22: I4, 23: F4E2M1, 25: U2, 26: I2,
}
_PORT_NAMES = frozenset({
    "x", "y", "w", "b", "a", "c", "scale", "bias", "mean", "var", "value", "i", "n", "k",
})
"""Names a shape symbol must not take: it would read as a port or a local
inside lowered kernels."""
_KEYWORDS = frozenset({
    "let", "for", "if", "else", "while", "return", "store", "atomic", "barrier", "array",
    "true", "false", "inf", "nan", "const", "graph", "node", "edge", "in", "out", "inout",
    "private", "root", "module", "hpvm",
})


def identifier(name: str, fallback: str) -> str:
    """``name`` as an identifier (other characters become ``_``); ``fallback``
    when nothing is left."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    text = re.sub(r"_+", "_", text)
    if not text:
        text = fallback
    if text[0].isdigit():
        text = "t" + text
    if text in _KEYWORDS:
        text += "_"
    return text


def symbol_name(dim_param: str) -> str:
    """A shape-symbol name for an ONNX ``dim_param`` (``batch_size``)."""
    name = identifier(dim_param, "N")
    return f"dim_{name}" if name in _PORT_NAMES else name


class UniqueNames:
    """Hands out identifiers, each once: ``conv``, ``conv_1`` ..."""

    def __init__(self, taken=()):
        self.taken = set(taken)

    def make(self, name: str, fallback: str) -> str:
        base = identifier(name, fallback)
        candidate, count = base, 0
        while candidate in self.taken:
            count += 1
            candidate = f"{base}_{count}"
        self.taken.add(candidate)
        return candidate
