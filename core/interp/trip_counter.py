"""The loop counter the interpreter reports to while a trip-count profile
runs (trip_profile.py): entries and iterations of every loop."""
from __future__ import annotations

import threading
from collections import defaultdict

from ..ir import kernel as k


class TripCounter:
    """Loop entries and iterations, counted per instance (lane)."""

    def __init__(self):
        self.entries: dict[int, int] = defaultdict(int)
        self.iterations: dict[int, int] = defaultdict(int)
        self.lock = threading.Lock()

    def count(self, loop: k.For, lanes: int, entering: bool) -> None:
        with self.lock:
            (self.entries if entering else self.iterations)[id(loop)] += lanes

    def mean(self, loop: k.For) -> float | None:
        entries = self.entries.get(id(loop), 0)
        return self.iterations.get(id(loop), 0) / entries if entries else None


ACTIVE: TripCounter | None = None
"""The counter the interpreter's loops report to while profiling
(trip_profile sets it)."""
