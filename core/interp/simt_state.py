"""State of a SIMT evaluation: variable scopes, call frames and masks.

Every scalar value is a numpy value over instances: 0-d when all instances
agree (uniform), else a 1-d array with one entry per instance (lane).  A
mask is None (every lane of the frame is active) or a 1-d bool array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class Scope:
    """Variables of one block; lookups fall back to the enclosing block."""

    __slots__ = ("values", "parent")

    def __init__(self, parent: "Scope | None" = None, values: dict | None = None):
        self.values: dict[str, Any] = {} if values is None else values
        self.parent = parent

    def declare(self, name: str, value) -> None:
        self.values[name] = value

    def find(self, name: str) -> "Scope | None":
        scope = self
        while scope is not None:
            if name in scope.values:
                return scope
            scope = scope.parent
        return None

    def lookup(self, name: str):
        scope = self.find(name)
        if scope is None:
            raise KeyError(name)
        return scope.values[name]


@dataclass
class Frame:
    """One function activation.  ``alive`` masks off lanes that returned;
    ``result`` collects helpers' return values lane by lane."""

    function: str
    alive: np.ndarray | None = None
    result: Any = None


def and_masks(a, b):
    """The lanes active in both masks (None means all)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def narrow(mask, condition):
    """``mask`` restricted to lanes where ``condition`` holds, and whether
    any lane is left.  A uniform condition keeps the mask as it is."""
    if np.ndim(condition) == 0:
        if not bool(condition):
            return mask, False
        return mask, mask is None or bool(mask.any())
    narrowed = condition if mask is None else mask & condition
    return narrowed, bool(narrowed.any())


def merge(mask, new, old):
    """``new`` on the active lanes, ``old`` elsewhere."""
    if mask is None:
        return new
    return np.where(mask, new, old)


def kill(alive, mask, count: int):
    """``alive`` after the lanes in ``mask`` returned."""
    if mask is None:
        return np.zeros(count, dtype=bool)
    if alive is None:
        return ~mask
    return alive & ~mask
