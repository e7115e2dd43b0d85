"""The program-level model (HPVM2FPGA's Eq. 5-6): what ``Target.estimate``
returns without running anything.

- Eq. 5, the dataflow graph: every node placed on the FPGA is its own
  kernel; with task parallelism the DFG takes as long as its critical path
  (nodes with no path between them run at once, one command queue each),
  without it the sum of its nodes.  A node costs its kernel's cycles
  (model.py) at the clock, plus the host's launch of the kernel.
- Eq. 6, time = cycles / Fmax, where Fmax falls as the fullest resource
  fills (profiles.py); the design is infeasible when any resource,
  the board support package's share included, exceeds the device.
"""
from __future__ import annotations

from hpvm.ir.graph import ConstantBody, KernelBody, Module
from hpvm.runtime.flatten import flatten
from hpvm.target import NodeRef

from .aoc_report import AocReport
from .model import kernel_report
from .profiles import KERNEL_LAUNCH_SECONDS, DeviceProfile, Resources

RESOURCE_NAMES = ("alms", "registers", "m20k", "dsps")


def estimate_program(module: Module, nodes: list[NodeRef], sizes: dict, profile: DeviceProfile,
                     task_parallelism: bool = True, report: AocReport | None = None) -> dict:
    """Seconds, cycles per node, area and feasibility of ``nodes`` of the
    sequentialized ``module`` run with ``sizes`` (hpvm.runtime.sizes).
    With aoc's ``report``, its loop IIs, area and clock replace the
    model's."""
    bytes_per_cycle = profile.bandwidth_gbs * 1e9 / (profile.fmax_mhz * 1e6)
    cycles: dict[str, float] = {}
    areas: dict[str, Resources] = {}
    loops = {}
    for ref in nodes:
        node = module.graph(ref.graph).node(ref.node)
        if isinstance(node.body, ConstantBody):
            data = node.body.data
            cycles[str(ref)] = data.nbytes / bytes_per_cycle
            continue
        assert isinstance(node.body, KernelBody)
        kernel = kernel_report(module, node.body.function, dict(sizes.get(ref, {})), profile,
                               bytes_per_cycle, report.loops if report else None)
        cycles[str(ref)] = kernel.cycles
        areas[node.body.function] = kernel.resources   # one kernel per function
        loops[str(ref)] = [loop.__dict__ for loop in kernel.loops]
    used = sum(areas.values(), profile.static)
    if report is not None and report.area is not None:
        used = report.area   # the whole system, static partition included
    shares = {name: getattr(used, name) / getattr(profile.capacity, name)
              for name in RESOURCE_NAMES}
    utilisation = max(shares.values())
    fmax = report.fmax_mhz if report is not None and report.fmax_mhz else \
        profile.fmax(utilisation)
    seconds = {key: c / (fmax * 1e6) + KERNEL_LAUNCH_SECONDS for key, c in cycles.items()}
    total = _critical_path(module, seconds) if task_parallelism else sum(seconds.values())
    over = [f"{name} {shares[name]:.0%}" for name in RESOURCE_NAMES if shares[name] > 1.0]
    result = {"seconds": total, "cycles": sum(cycles.values()), "fmax_mhz": fmax,
              "utilisation": utilisation, **used.as_dict(),
              "feasible": not over, "device": profile.name,
              "source": "aoc report" if report is not None else "model",
              "node_cycles": {key: round(c) for key, c in cycles.items()}, "loops": loops}
    if over:
        result["reason"] = (f"the design does not fit the {profile.description}: "
                            f"{', '.join(over)} of the device")
    return result


def _critical_path(module: Module, seconds: dict[str, float]) -> float:
    """The longest path through the flattened DFG, nodes weighted by
    ``seconds`` (nodes on other targets weigh nothing)."""
    finish: dict[int, float] = {}
    for task in flatten(module).tasks:
        start = max((finish[d] for d in task.deps), default=0.0)
        finish[task.index] = start + seconds.get(str(task.ref), 0.0)
    return max(finish.values(), default=0.0)
