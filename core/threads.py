"""How many cores hpvm's threads may use.

Every pool of worker threads (the runtime's scheduler, the cpu target's
kernels, emulated accelerators) sizes itself with :func:`available_cores`,
so that hpvm neither oversubscribes a container's CPU quota nor ignores the
thread count a user set for the process.
"""
from __future__ import annotations

import functools
import math
import os
from pathlib import Path

THREADS_VARIABLES = ("HPVM_NUM_THREADS", "OMP_NUM_THREADS")
"""Environment variables that set the thread count, first found wins."""


@functools.cache
def available_cores() -> int:
    """``$HPVM_NUM_THREADS``, else ``$OMP_NUM_THREADS`` (its first number),
    else the CPUs this process may run on, capped by its cgroup's CPU
    quota; at least 1."""
    for variable in THREADS_VARIABLES:
        text = os.environ.get(variable, "").split(",")[0].strip()
        if text.isdigit() and int(text) > 0:
            return int(text)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cpus, quota) if quota else cpus)


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The CPUs a cgroup quota allows this process (rounded up), or None
    where no quota is set (cgroup v2 ``cpu.max``, else v1's CFS files)."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            return max(1, math.ceil(int(quota) / int(period)))
        return None
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None
