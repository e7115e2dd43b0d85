"""Launches of a static schedule not yet waited for.

A device with ``ordered_launches`` (gpu_opencl: an in-order queue per
launching thread) runs a static schedule's launches in the order they are
made, so the schedule need not wait for each before it makes the next:
the device would idle while the host noticed the end of one kernel and
launched the next (on the lent H200, 8-85 us a node; ten stencil sweeps
of 80 us each took 2.1 ms a call waited one by one).  It waits where the
host must see the device's work: before a clear or a copy between
launches (those go through another queue, and may reuse a buffer an
earlier launch reads) and after the last launch.  Each launch's record
then gets the time the device measured (``Device.elapsed``).
"""
from __future__ import annotations

from typing import Any

from ..errors import HpvmError
from .execution import NodeRecord, launch_failure
from .memory import CopyStats
from .static_planner import Step


class PendingLaunches:
    """Launches made, not yet waited for, and their records (in the run's
    records already, their times to come)."""

    def __init__(self, records: list[NodeRecord]):
        self.records = records
        self._launches: list[tuple[NodeRecord, Step, Any]] = []

    def __bool__(self) -> bool:
        return bool(self._launches)

    def add(self, step: Step, event: Any) -> None:
        """Record ``step``'s launch (``event``), its time to come."""
        record = NodeRecord(step.plan.task.label, step.label, 0.0, CopyStats())
        self._launches.append((record, step, event))
        self.records.append(record)

    def settle(self) -> None:
        """Wait for every pending launch (the last one's wait is every
        one's, the device running them in order) and record each one's
        time; a failure is reported against the last launch."""
        launches, self._launches = self._launches, []
        last = next(((step, event) for _, step, event in reversed(launches)
                     if event is not None), None)
        if last is not None:
            step, event = last
            try:
                step.device.wait(event)
            except HpvmError:
                raise
            except Exception as error:  # a device or driver failing mid-run
                raise launch_failure(step.plan, error) from error
        for record, step, event in launches:
            record.seconds = (step.device.elapsed(event) if event is not None else None) or 0.0

    def abandon(self) -> None:
        """Wait for the pending launches of a run that failed (their buffers
        are about to be freed), raising nothing."""
        try:
            self.settle()
        except Exception:  # the run's own error is the one to report
            pass
