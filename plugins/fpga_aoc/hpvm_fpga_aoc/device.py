"""The runtime shims of 'fpga_aoc'.

- :class:`SingleWorkItemDevice`: the generated single-work-item kernels on
  an OpenCL device, each launched as one work item (``clEnqueueTask``'s
  NDRange of 1), as on the FPGA.  On an Intel FPGA platform that is the
  hardware; on any other device (PoCL, NVIDIA) it is the emulation, the
  way ``aoc -march=emulator`` is used.  hpvm_opencl's device does the
  buffers, copies and argument packing.
- :class:`HostEmulationDevice`: where no OpenCL device works, the same
  sequentialized kernels (the IR the .cl is printed from) compiled for the
  host by the cpu target, one thread per kernel, as the single work item
  runs them.

Emulated timings are labelled ``emulated``: they say nothing about the
FPGA (``Target.estimate`` does).
"""
from __future__ import annotations

from typing import Any

from hpvm.errors import Location
from hpvm.target import Device, NodeRef
from hpvm_opencl.device import NodePlan, OpenCLDevice


class SingleWorkItemDevice(OpenCLDevice):
    """Kernels of rank 0 launched as a single work item.

    With task parallelism every thread the runtime launches from gets its
    own in-order command queue (hpvm_opencl's device), so kernels with no
    path between them run at once (on the FPGA: side by side); without it
    every kernel goes to the one queue.  With ``asynchronous`` (the
    default) launches return at once and carry the DFG's dependencies as
    OpenCL events: a kernel waits on the device for its inputs' writers,
    the host only where it reads a result."""

    name = "fpga_aoc"
    multicore_launch = False
    """A single work item fills one kernel's pipeline, not the FPGA: kernels
    with no path between them run side by side (task parallelism), so the
    runtime keeps its dynamic scheduler unless task parallelism is off."""

    def __init__(self, *args, emulated: bool, **kwargs):
        super().__init__(*args, **kwargs)
        labels = ["emulated"] if emulated else []
        if self.asynchronous:
            labels.append("asynchronous: launch times")
        self.timing_label = "; ".join(labels)

    def launch_geometry(self, plan: NodePlan, sizes: tuple[int, ...],
                        group: tuple[int, ...] | None, where: Location, padded: bool):
        return (1,), (1,)


class HostEmulationDevice(Device):
    """Delegates to the cpu target's device running the sequentialized
    kernels; only the name and the timing label differ."""

    name = "fpga_aoc"
    timing_label = "emulated on the host"

    def __init__(self, inner: Device):
        self.inner = inner
        self.host_memory = inner.host_memory
        self.async_launch = inner.async_launch

    def allocate(self, shape, dtype):
        return self.inner.allocate(shape, dtype)

    def copy_in(self, handle, array) -> None:
        self.inner.copy_in(handle, array)

    def copy_out(self, handle):
        return self.inner.copy_out(handle)

    def duplicate(self, handle, shape, dtype):
        return self.inner.duplicate(handle, shape, dtype)

    def free(self, handle) -> None:
        self.inner.free(handle)

    def launch(self, node: NodeRef, args: dict[str, Any]):
        return self.inner.launch(node, args)

    def wait(self, event) -> None:
        self.inner.wait(event)
