"""A tuning parameter and the error of the tuner (core/tune/space.py
gathers parameters into a space)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import HpvmError


def as_json(value: Any) -> str:
    """``value`` as canonical JSON (a list read from a file matches a tuple)."""
    return json.dumps(value, sort_keys=True)


class TuneError(HpvmError):
    """A space, a configuration or a tuning request that cannot be used."""


@dataclass(frozen=True)
class Parameter:
    """One tuning parameter: a readable unique ``name``, the admissible
    ``values``, the ``default`` (what compiling without tuning does), what
    it acts on in words (``about``), how it is realised (``role`` and
    ``subject``: the node, pair, function, loop, parameter or option), and
    the value that leaves the program as written where the default does
    not (``as_written``; None: the default)."""

    name: str
    values: tuple
    default: Any
    about: str
    role: str
    subject: Any = None
    as_written: Any = None

    @property
    def ordered(self) -> bool:
        """Numbers (an order the optimiser may exploit), not categories."""
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)

    def index_of(self, value: Any) -> int:
        """The position of ``value`` (compared as JSON, so a list read from
        a file matches a tuple); ValueError when it is not admissible."""
        wanted = as_json(value)
        for index, candidate in enumerate(self.values):
            if as_json(candidate) == wanted:
                return index
        raise ValueError(value)

    def label(self, value: Any) -> str:
        """``value`` in words: yes/no, 16x16, full (9), as written."""
        if isinstance(value, bool):
            return "yes" if value else "no"
        if value is None:
            return "target's choice"
        if isinstance(value, (tuple, list)):
            return "x".join(map(str, value))
        if self.role == "loop-unroll":
            if value == 0:
                return "as written"
            if value == self.values[-1] and self.subject[1]:
                return f"full ({value})"
        return str(value)
