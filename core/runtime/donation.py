"""Inputs a caller gives up: ``exe(grid=hpvm.donate(a))``.

The runtime never writes an array it was given (docs/device-arrays.md): a
node that updates an input in place works on a private copy of it.  A
donated array is the caller's permission to skip that copy.  Where a run
keeps its values in host memory (the cpu target's static schedule), a
node that updates the donated input in place, with nothing reading the
input after it, updates the caller's array itself, and that output is
the same array object.  Time steps of an in-place update then copy
nothing::

    for _ in range(steps):
        grid = exe(grid=hpvm.donate(grid))["grid"]

After the call the donated array's contents are the caller's no longer:
they may or may not have been overwritten (as with JAX's donated
arguments).  Elsewhere the donation is ignored and the input copied as
without it: on a device of its own memory (the input is copied there
anyway), on the dynamic scheduler, for a call of ``launch`` or ``bind``,
and where the array shares memory with another input (the node would
read what it writes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HpvmError


@dataclass(frozen=True)
class Donated:
    """An input array the caller gives up (:func:`donate`)."""

    array: Any


def donate(array) -> Donated:
    """Mark ``array`` (a numpy array, or any array an input may be) as
    given up to the call it is passed to (see the module text)."""
    if isinstance(array, Donated):
        return array
    if not hasattr(array, "shape"):
        raise HpvmError(f"donate: only arrays can be donated, not {type(array).__name__} "
                        "(fix: pass scalars as they are)")
    return Donated(array)


def take_donations(inputs: dict[str, Any]) -> frozenset[str]:
    """Replace every donated input of ``inputs`` (a dict of the call's
    own) by its array; the names of those inputs."""
    names = frozenset(name for name, value in inputs.items() if isinstance(value, Donated))
    for name in names:
        inputs[name] = inputs[name].array
    return names


def usable_donations(donated: frozenset[str], checked: dict[str, Any]) -> frozenset[str]:
    """The donated inputs whose checked value is a host array sharing no
    memory with another input."""
    arrays = {name: value for name, value in checked.items() if isinstance(value, np.ndarray)}
    return frozenset(
        name for name in donated if name in arrays
        and not any(other != name and np.may_share_memory(arrays[name], value)
                    for other, value in arrays.items()))
