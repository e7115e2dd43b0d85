"""The runtime shim of 'gpu_opencl': device buffers (memory.py), copies and launches.

Handles are :class:`DeviceBuffer` (a ``cl.Buffer`` with its shape and
dtype).  Copies and fills go to the device's in-order queue.  Kernels go
there too, unless task parallelism is on (the default): then every thread
the runtime launches from gets its own in-order queue, so kernels with no
path between them run at the same time on the device.  The runtime waits
for a producer's event before it launches a consumer, so the DFG's
dependencies hold across queues; fills and device-to-device copies finish
before they return for the same reason.  ``launch`` returns the kernel's
event and ``wait`` waits for it; the queues profile, so a node's time in
run reports is its kernel's own (``elapsed``).  A program placed wholly
here runs its static schedule without a wait after each launch, the
thread's queue keeping them in order (``ordered_launches``,
hpvm.runtime.pending_launches).  Reads back to the host (``copy_out``)
are blocking, and so is ``copy_in`` (the caller may reuse its array).
``copy_out`` reads into arrays of an OutputPool (hpvm.runtime.output_pool):
the memory of results the caller dropped, already mapped, instead of fresh
pages faulted in by the copy.

With the option ``asynchronous`` the runtime does not wait for launches:
each buffer remembers the event of its last writer and of its readers
since, a kernel waits for those on the device (``wait_for``), and the
host waits only where it reads or overwrites a buffer.  Run reports then
time launches, not kernels, and say so.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from hpvm.errors import Location
from hpvm.ir.graph import ConstantBody, Module
from hpvm.ir.shapes import bind_symbols, replication_sizes
from hpvm.runtime.output_pool import OutputPool
from hpvm.target import Device, NodeRef

from .arrays import Adoptions
from .bound_launch import BoundLaunch
from .devices import DeviceRuntime
from .launch import chosen_group, default_group, geometry, work_items
from .launch_tests import launch_tests, true_tests
from .layout import Argument
from .memory import DeviceBuffer, DeviceMemory
from .narrowing import NARROW_SIZE
from .transfers import Transfers

DEFAULT_TRANSFER = "auto"


@dataclass(frozen=True)
class NodePlan:
    """How to run one node: a kernel entry and its arguments, or a constant."""

    kind: str
    function: str = ""
    entry: str = ""
    rank: int = 1
    synchronous: bool = False
    per_item: int = 1
    """Instances a work item may run (steps.PER_ITEM;
    :meth:`OpenCLDevice.work_items`)."""
    stepped: int = -1
    """The replication dimension they lie along: -1 the innermost, 0 the
    outermost (steps.py's march)."""
    lanes: int = 1
    """Instances of the innermost dimension a marching work item runs besides
    (lanes.py)."""

    def to_json(self) -> dict:
        return self.__dict__.copy()


class OpenCLDevice(DeviceMemory, Device):
    """One OpenCL device running the nodes of one artifact."""

    name = "gpu_opencl"
    host_memory = False
    multicore_launch = True
    """A kernel spreads over the whole device: a program placed wholly here
    runs its nodes in a static schedule, buffers kept on the device
    (runtime/static_run.py); nodes side by side on several queues measured
    slower on the H100 (ablation in benchmarks/RESULTS.md)."""

    def __init__(self, runtime: DeviceRuntime, program, module: Module,
                 plans: dict[str, NodePlan], arguments: dict[str, list[Argument]], options: dict,
                 build_variant: Callable[[bool, tuple[str, ...]], Any] | None = None):
        """``program`` indexes buffers in ``int`` and takes every launch
        test (launch_tests.py) as false where ``build_variant`` is given:
        the function building the program with ``long`` indices (if its
        first argument is true: a launch passes a buffer of more elements
        than ``int`` counts) and the given launch tests true, called for a
        launch that needs a variant not built yet; None: ``program`` serves
        every launch."""
        self.runtime = runtime
        self.program = program
        self._build_variant = build_variant
        self._variants: dict[tuple[bool, tuple[str, ...]], Any] = {(False, ()): program}
        self._launch_tests: dict[str, tuple] = {}   # function -> its launch tests
        self._true_tests: dict[tuple[str, tuple[int, ...]], tuple[str, ...]] = {}
        self._buffer_arguments = {entry: tuple(a.name for a in entry_arguments
                                               if a.kind == "buffer")
                                  for entry, entry_arguments in arguments.items()}
        self.module = module
        self.plans = plans
        self.arguments = arguments
        self.work_group = options.get("work_group")
        self.transfers = Transfers(runtime, options.get("transfer", DEFAULT_TRANSFER))
        self.host_arrays = OutputPool()
        self.task_parallelism = options.get("task_parallelism", True)
        self.asynchronous = options.get("asynchronous", False)
        self.async_launch = self.asynchronous
        if self.asynchronous:
            self.timing_label = "asynchronous: launch times"
        self.queues: list = []
        self._local = threading.local()
        self._kernels: dict[tuple[str, tuple], Any] = {}
        self._group_limits: dict[str, int] = {}
        self._constants: dict[str, Any] = {}
        self._written: dict[str, set[str]] = {}   # function -> buffers it writes (asynchronous)
        self._adoptions = Adoptions()

    def kernel_queue(self):
        """The queue this thread launches kernels on (see the module docstring)."""
        if not self.task_parallelism:
            return self.runtime.queue
        queue = getattr(self._local, "queue", None)
        if queue is None:
            import pyopencl as cl
            queue = self._local.queue = cl.CommandQueue(
                self.runtime.context, self.runtime.device,
                cl.command_queue_properties.PROFILING_ENABLE)
            with self.runtime.lock:
                self.queues.append(queue)
        return queue

    def finish(self) -> None:
        """Wait for every queue's commands."""
        for queue in [self.runtime.queue, *self.queues]:
            queue.finish()

    # -- execution ---------------------------------------------------------
    def launch(self, node: NodeRef, args: dict[str, Any]):
        plan = self.plans[str(node)]
        if plan.kind == "constant":
            body = self.module.graph(node.graph).node(node.node).body
            return self._copy_constant(str(node), body, args["value"])
        return self.enqueue(plan, args, *self.replication(node, plan, args))

    def bind(self, node: NodeRef, args: dict[str, Any]):
        """Waited kernel launches are prepared once (bound_launch.py)."""
        plan = self.plans[str(node)]
        if plan.kind == "constant" or self.asynchronous:
            return super().bind(node, args)
        return BoundLaunch(self, node, plan, args)

    def replication(self, node: NodeRef, plan: NodePlan, args: dict[str, Any]) -> tuple:
        """(replication sizes, work-group size or None, location, whether
        the node runs whole groups) of a kernel node's launch with ``args``."""
        graph_node = self.module.graph(node.graph).node(node.node)
        kernel = self.module.function(plan.function)
        where = Location(graph=node.graph, node=node.node)
        sizes = replication_sizes(graph_node.replication, bind_symbols(kernel.params, args, where),
                                  where)
        group = chosen_group(node.node, len(sizes), graph_node.attributes.get("group"),
                             self.work_group)
        return sizes, group, where, graph_node.padded_groups

    def enqueue(self, plan: NodePlan, args: dict[str, Any], sizes: tuple[int, ...],
                group: tuple[int, ...] | None, where: Location, padded: bool = False):
        """Launch ``plan``'s entry over replication ``sizes`` with work-group
        size ``group`` (None: the driver's choice); returns its event."""
        if math.prod(sizes) == 0:
            return None
        global_size, local_size = self.launch_geometry(plan, sizes, group, where, padded)
        return self.enqueue_kernel(plan, args, sizes, global_size, local_size)

    def launch_geometry(self, plan: NodePlan, sizes: tuple[int, ...],
                        group: tuple[int, ...] | None, where: Location, padded: bool
                        ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
        """(global size, local size) of a launch (launch.geometry).
        ``padded``: the node runs whole groups (attribute padded_groups), so
        even a synchronising kernel's global size is padded up."""
        items = self.work_items(plan, sizes)
        max_group = self.runtime.info.max_work_group_size
        if group is None and not plan.synchronous and "GPU" in self.runtime.info.kind:
            group = default_group(items, min(max_group, self._group_limit(plan.entry)),
                                  self.runtime.info.compute_units)
        return geometry(items, group, plan.synchronous and not padded, max_group, where)

    def _group_limit(self, entry: str) -> int:
        """The most work items a group of ``entry``'s kernel may hold on
        this device (CL_KERNEL_WORK_GROUP_SIZE: a kernel's registers or
        local memory may allow fewer than the device's maximum)."""
        limit = self._group_limits.get(entry)
        if limit is None:
            import pyopencl as cl
            with self.runtime.lock:
                limit = cl.Kernel(self.program, entry).get_work_group_info(
                    cl.kernel_work_group_info.WORK_GROUP_SIZE, self.runtime.device)
            self._group_limits[entry] = limit
        return limit

    def work_items(self, plan: NodePlan, sizes: tuple[int, ...]) -> tuple[int, ...]:
        """The work items of ``plan``'s launch over replication ``sizes``
        (launch.work_items)."""
        return work_items(sizes, plan.per_item, self.runtime.info.compute_units, plan.stepped,
                          plan.lanes)

    def new_kernel(self, plan: NodePlan, args: dict[str, Any], sizes: tuple[int, ...]):
        """A kernel object of ``plan``'s entry of its own, from the program
        for the sizes of ``args``'s buffers and the replication ``sizes``."""
        import pyopencl as cl
        with self.runtime.lock:
            return cl.Kernel(self._program(self._variant(plan, args, sizes)), plan.entry)

    def _variant(self, plan: NodePlan, args: dict[str, Any], sizes: tuple[int, ...]
                 ) -> tuple[bool, tuple[str, ...]]:
        """The program a launch of ``plan`` with ``args`` over ``sizes``
        needs: whether with ``long`` indices (program.NARROW_ELEMENTS,
        NARROW_SIZE), and which of its launch tests hold."""
        if self._build_variant is None:
            return False, ()
        wide = any(n > NARROW_SIZE for n in sizes) or \
            not all(args[name].narrow for name in self._buffer_arguments[plan.entry])
        tests = self._launch_tests.get(plan.function)
        if tests is None:
            tests = self._launch_tests[plan.function] = launch_tests(
                self.module.function(plan.function))
        if not tests:
            return wide, ()
        key = (plan.function, sizes)
        holding = self._true_tests.get(key)
        if holding is None:
            holding = self._true_tests[key] = true_tests(plan.function, tests, sizes)
        return wide, holding

    def enqueue_kernel(self, plan: NodePlan, args: dict[str, Any], sizes: tuple[int, ...],
                       global_size: tuple[int, ...], local_size: tuple[int, ...] | None):
        """Set the arguments of ``plan``'s entry and enqueue it on this
        thread's kernel queue; its event.  Asynchronous, it first waits (on
        the device) for the last writer of every buffer it uses and, for
        those it writes, for their readers: the DFG's dependencies as
        OpenCL events, with no host round trip."""
        import pyopencl as cl
        values = [self.argument_value(a, args, sizes) for a in self.arguments[plan.entry]]
        queue = self.kernel_queue()
        variant = self._variant(plan, args, sizes)
        with self.runtime.lock:
            cl_kernel = self._kernels.get((plan.entry, variant))
            if cl_kernel is None:
                cl_kernel = self._kernels[(plan.entry, variant)] = cl.Kernel(
                    self._program(variant), plan.entry)
            cl_kernel.set_args(*values)
            if not self.asynchronous:
                return cl.enqueue_nd_range_kernel(queue, cl_kernel, global_size, local_size)
            buffers = {name: handle for name, handle in args.items()
                       if isinstance(handle, DeviceBuffer)}
            written = self._written.get(plan.function)
            if written is None:
                written = self._written[plan.function] = {
                    p.name for p in self.module.function(plan.function).params
                    if p.is_buffer and p.direction in ("out", "inout")}
            after = [e for name, handle in buffers.items()
                     for e in [handle.writer, *(handle.readers if name in written else ())]
                     if e is not None]
            event = cl.enqueue_nd_range_kernel(queue, cl_kernel, global_size, local_size,
                                               wait_for=after or None)
            for name, handle in buffers.items():
                if name in written:
                    handle.writer, handle.readers = event, []
                else:
                    done = cl.command_execution_status.COMPLETE
                    handle.readers = [e for e in handle.readers
                                      if e.command_execution_status != done] + [event]
            return event

    def _program(self, variant: tuple[bool, tuple[str, ...]]):
        """The program of ``variant`` (``_variant``; under the runtime's lock)."""
        program = self._variants.get(variant)
        if program is None:
            program = self._variants[variant] = self._build_variant(*variant)
        return program

    def wait(self, event) -> None:
        """Block until ``event`` is done; asynchronous, return at once (the
        next command that needs the result waits for it on the device, a
        read back to the host waits for it there)."""
        if event is not None and not self.asynchronous:
            event.wait()

    @property
    def ordered_launches(self) -> bool:
        """Waited launches: each thread's in-order queue runs them in order."""
        return not self.asynchronous

    def elapsed(self, event) -> float | None:
        """The kernel's own time on the device, from its profiling event
        (the queues profile); None asynchronous (the report times launches)."""
        if event is None or self.asynchronous:
            return None
        import pyopencl as cl
        info = event.get_profiling_info   # not event.profile: pyopencl's __getattr__ is slow
        return (info(cl.profiling_info.END) - info(cl.profiling_info.START)) * 1e-9

    def argument_value(self, argument: Argument, args: dict, sizes: tuple[int, ...]):
        """The value ``argument`` is set to for a launch with ``args`` over
        replication ``sizes``."""
        if argument.kind == "count":
            return np.int64(sizes[argument.index])
        if argument.kind == "scalar":
            return _scalar(args[argument.name], argument.type)
        handle: DeviceBuffer = args[argument.name]
        if argument.kind == "buffer":
            return handle.buffer
        if argument.kind == "dim":
            return np.int64(handle.shape[argument.index])
        if argument.kind == "length":
            return np.int64(math.prod(handle.shape))
        # scratch: one private copy per instance, filled by the kernel
        return self._new_buffer((math.prod(sizes),) + handle.shape, handle.dtype,
                                pooled=False).buffer

    def _copy_constant(self, key: str, body: ConstantBody, handle: DeviceBuffer):
        import pyopencl as cl
        if not handle.nbytes:
            return None
        source = self._constants.get(key)
        if source is None:
            data = np.ascontiguousarray(body.data, dtype=handle.dtype)
            source = cl.Buffer(self.runtime.context, cl.mem_flags.READ_ONLY
                               | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
            self._constants[key] = source
        handle.settled()
        event = cl.enqueue_copy(self.runtime.queue, handle.buffer, source, byte_count=handle.nbytes)
        handle.writer, handle.readers = event, []
        return event


def _scalar(value, type_name: str):
    """A scalar argument as the kernel declares it (bool as uchar, f16 as
    float)."""
    if type_name == "bool":
        return np.uint8(bool(value))
    if type_name == "f16":
        return np.float32(np.float16(value))
    from hpvm.ir.types import SCALAR_TYPES
    return SCALAR_TYPES[type_name].numpy_dtype.type(value)
