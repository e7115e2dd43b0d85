"""The 'gpu_opencl' target: leaf nodes as OpenCL C kernels on a GPU (or any
OpenCL device: PoCL runs them on the CPU).

Matcher: every kernel node, constant node and tensor op (lowered to kernels
first: none is native).  Code generator: one OpenCL C program holding an
entry per (kernel function, replication rank) and the helpers they call
(renderer.py, on hpvm.codegen's C-style renderer); the artifact keeps the
source, the module, the argument layouts and, per generated line, the IR it
came from.  When a device is present, compile already builds the program,
so build errors surface at compile time and the binary cache is warm.
Runtime shim: device.py.

Options: ``platform``, ``device`` (devices.py), ``work_group`` (launch.py),
``per_item`` and ``per_item_layout`` (steps.py), ``lanes`` (lanes.py), ``fast_math`` and
``build_options`` (program.py).
"""
from __future__ import annotations

import json

from hpvm.errors import HpvmError, TargetError
from hpvm.ir.graph import ConstantBody, Graph, KernelBody, Module, Node, TensorBody
from hpvm.options import Option
from hpvm.target import Artifact, Availability, Device, Knob, NodeRef, Target

from hpvm_opencl.device import DEFAULT_TRANSFER, NodePlan, OpenCLDevice
from hpvm_opencl.lanes import LANE_CHOICES, LANES
from hpvm_opencl.launch import RESIDENT_ITEMS
from hpvm_opencl.layout import Argument, entry_arguments, synchronizes
from hpvm_opencl.steps import LAYOUTS, PER_ITEM
from hpvm_opencl.transfers import MODES as TRANSFER_MODES

SOURCE_FILE = "kernels.cl"
MODULE_FILE = "module.hpvm"
ORIGINS_FILE = "kernels.origins.json"
WORK_GROUP_CHOICES = {1: ((64,), (128,), (256,)), 2: ((8, 8), (8, 32), (16, 16), (4, 64)),
                      3: ((4, 4, 4), (1, 8, 32))}
PER_ITEM_CHOICES = (1, 2, 4, 8)
FEATURE_NEEDS = {"fp64": ("fp64", "double precision (f64)", "cl_khr_fp64"),
                 "fp64_division": ("fp64", "f32 division by constants in double precision "
                                   "(compiled for a device that has it: compile again for "
                                   "this one)", "cl_khr_fp64"),
                 "atomics64": ("atomics64", "64-bit atomics",
                               "cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics")}


OPTIONS = [
    Option("platform", object, None, "OpenCL platform: an index or part of its name"),
    Option("device", object, None, "OpenCL device: an index or part of its name "
           "(default: the first GPU, else the first device)"),
    Option("work_group", object, None, "work-group size: a tuple for every node, or a dict "
           "node -> tuple; None: chosen per node"),
    Option("per_item", int, None, "instances of a kernel's innermost dimension one work "
           "item runs, strided by the launch's width, where the kernel neither synchronises "
           "its group nor returns early and the launch still fills the device (None: "
           f"{PER_ITEM} on a GPU, 1 on a CPU device, whose compiler packs work items into "
           "vector lanes itself)", choices=PER_ITEM_CHOICES),
    Option("per_item_layout", str, "auto", "how a work item's instances lie: contiguous "
           "(adjacent, unrolled: the device compiler merges their accesses into vector "
           "accesses), strided (a launch's width apart), march (adjacent along the outermost "
           "dimension, shifted reads of one buffer shared in registers), auto (contiguous unless "
           "the innermost instance id decides a branch, there march where shifted reads "
           "exist; strided there and where loops, correctly rounded divisions or square "
           "roots, or in-place buffers keep the steps' accesses apart)", choices=LAYOUTS),
    Option("lanes", int, LANES, "adjacent instances of the innermost dimension a marching "
           "work item runs, its shifted reads loaded as vectors for all of them",
           choices=LANE_CHOICES),
    Option("narrow_indices", bool, True, "compute index values that provably fit in 32 "
           "bits in int, on launches whose sizes are at most 2^29 along every dimension"),
    Option("fast_math", bool, False, "build with -cl-fast-relaxed-math"),
    Option("build_options", list, (), "more OpenCL C compiler flags"),
    Option("transfer", str, DEFAULT_TRANSFER, "how buffers move between host and device: "
           "copy (pageable), map, pinned (page-locked staging, host side threaded), auto "
           "(copy on CPU devices, else pinned)", choices=tuple(TRANSFER_MODES)),
    Option("task_parallelism", bool, True, "a command queue per launching thread: kernels "
           "with no path between them run at the same time"),
    Option("asynchronous", bool, False, "launches return at once and kernels wait for their "
           "inputs on the device (OpenCL events), not the host; run reports then give "
           "launch times"),
]


GPU_REGISTER_TILES = "register-tile{form=group rows=8 cols=8 group=16 kblock=16 unroll=16 fill=%d}"
"""Work groups of 16 x 16 instances, each 8 x 8 results in registers,
blocks of 16 steps through local tiles (every OpenCL GPU has 32 KiB),
the next block's reads under way during this one's products.  ``fill``
(half the device's compute units): a launch that would make fewer
groups runs smaller tiles (register_tile_fill.py: 8 x 4 results, then
4 x 4 in 8 x 8 groups).  The suite's sgemm on an H200 (132 SMs; ms):

    n      as written  8x8/16  8x4/16  4x4/16  4x4/8   chosen here
    512    0.058       0.084   0.063   0.043   0.037   4x4/8
    1024   0.342       0.154   0.114   0.108   0.124   8x4/16 (128 groups)
    2048   3.04        0.589   0.678   0.730   0.878   8x8/16
    4096   30.1        4.452   5.226   5.603   6.639   8x8/16

(cuBLAS FP32 at 4096^3: 2.70 ms.)  Half the units, not all: at 1024^3
the 128 groups of 8 x 4 tiles still beat 4 x 4 tiles' 1,024 groups."""
GPU_STENCIL_TILES = "stencil-fusion{form=tile size=16 rows=2}"
"""Groups of 16 x 16 work items (every OpenCL GPU takes 256), each two
rows of the stencil.  On an H200, blur took 0.024 ms so, camera 0.064
(the nodes apart 0.033 and 0.071; blur recomputing at each read 0.027;
groups of 32 x 32, two rows each: 0.025 and 0.062)."""
GPU_ROW_LANES = 128
"""Work-group lanes sharing each instance's reductions in kernels lowered
from tensor ops (a row of a softmax, a layer norm, a reduce): a warp
group per row, its loads coalesced."""
GPU_CHUNKS = 65536
"""Partial results of a one-instance reduction on a GPU: enough work items
to fill an H100 (132 SMs) with a few hundred elements each at 16M."""


class GpuOpenCLTarget(Target):
    name = "gpu_opencl"
    description = "GPUs and other OpenCL devices through OpenCL C (PoCL, NVIDIA)"
    @property
    def default_pipeline(self) -> str:
        """Fusing nodes keeps intermediates out of memory (edge: 1.4x on the
        H100); time steps updated in place fuse too, out of place, and
        outputs that copy another buffer are not made (copy-propagation;
        cfd: 16 kernels -> 6, 0.243 -> 0.187 ms on an H200).  A stencil reading
        a neighbourhood of a producer's output computes the producer's
        elements per work group into local memory
        (GPU_STENCIL_TILES); other cheap producers are recomputed where
        they are read (stencil-fusion's heuristic).
        Loop nests that reuse their reads across instances (matrix
        products) run as work groups of register micro-tiles
        (GPU_REGISTER_TILES), smaller ones where a launch would leave
        compute units without a group.  On a GPU, a reduction in one instance is
        spread over the whole device (chunks), then every reduction loop left folds as a
        tree in a work group's local memory.  Loops of launches too small
        to fill the device are unrolled (latency-unroll, by the work items
        it keeps resident).
        Loop nests that walk memory column by column are swapped where
        they may walk it row by row (loop-interchange: a 2048 x 2048
        scaling in one work item, 96 -> 6.2 ms on PoCL, 151 -> 122 ms on
        an H200), and those that walk it along both loops run in blocks
        (loop-tile), as the cpu target does.  CPU OpenCL devices (PoCL)
        run many work items and barriers slower than a loop, so they keep
        reductions as written."""
        if not on_gpu({}):
            return "node-fusion,copy-propagation,loop-interchange,loop-tile,dce"
        return (f"node-fusion,copy-propagation,loop-interchange,loop-tile,{GPU_STENCIL_TILES},"
                "stencil-fusion,"
                f"{GPU_REGISTER_TILES % max(1, compute_units({}) // 2)},"
                f"parallel-reduce{{form=chunks lanes={GPU_CHUNKS} layout=strided grain=256}},"
                f"parallel-reduce,latency-unroll{{in_flight={resident_work_items({})}}},dce")

    def passes(self, options: dict) -> str:
        """On a GPU, kernels lowered from tensor ops run the reductions of
        each instance (a row) in a work group, folded as a tree, and share
        the loops after them: one work item a row left 2% of the H200's
        bandwidth to a layer norm."""
        return (f"parallel-reduce{{form=tree lanes={GPU_ROW_LANES} lowered=true}}"
                if on_gpu(options) else "")

    def availability(self) -> Availability:
        try:
            import pyopencl
        except ImportError as error:
            return Availability.no(f"pyopencl cannot be imported ({error}); pip install "
                                   "hpvm-gpu-opencl (hpvm-gpu-opencl[pocl] for a CPU device)")
        from hpvm_opencl.devices import (
            all_devices, describe_devices, device_info, select_device, usable_devices,
        )
        if not all_devices():
            return Availability.no("pyopencl finds no OpenCL device; install a driver (an ICD) "
                                   "or OpenCL on the CPU: pip install \"hpvm-gpu-opencl[pocl]\"")
        if not usable_devices():
            return Availability.no(f"no OpenCL device can compile a kernel: {describe_devices()}; "
                                   "install a driver (an ICD) whose compiler knows this machine, "
                                   "e.g. a newer PoCL")
        default = device_info(select_device({})).name
        return Availability.yes(f"pyopencl {pyopencl.VERSION_TEXT}; devices: {describe_devices()}"
                                f"; default: {default}")

    def options(self) -> list[Option]:
        return OPTIONS

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        return isinstance(node.body, (KernelBody, ConstantBody, TensorBody))

    def knobs(self, module: Module, nodes: list[NodeRef]) -> list[Knob]:
        """The transfer mode, instances a work item, their layout, 32-bit
        index arithmetic and, where a kernel could march (two or more
        dimensions), its lanes (whole program); a work-group size per
        replicated kernel node without a ``group``."""
        knobs = [Knob("transfer", TRANSFER_MODES, DEFAULT_TRANSFER, copies_only=True),
                 Knob("per_item", PER_ITEM_CHOICES, default_per_item({})),
                 Knob("per_item_layout", LAYOUTS, "auto"),
                 Knob("narrow_indices", (True, False), True)]
        groups = []
        for ref in nodes:
            node = module.graph(ref.graph).node(ref.node)
            rank = len(node.replication)
            if isinstance(node.body, KernelBody) and rank and "group" not in node.attributes:
                groups.append(Knob("work_group", (None,) + WORK_GROUP_CHOICES[rank], None, ref))
        if any(len(module.graph(ref.graph).node(ref.node).replication) > 1 for ref in nodes):
            knobs.append(Knob("lanes", LANE_CHOICES, LANES))
        return knobs + groups

    # -- code generation ---------------------------------------------------
    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from hpvm.ir.text import print_module
        from hpvm_opencl.renderer import OpenCLRenderer
        renderer = OpenCLRenderer(module, options.get("per_item") or default_per_item(options),
                                  options.get("per_item_layout") or "auto",
                                  _exact_division_in_double(options),
                                  bool(options.get("fast_math")),
                                  options.get("lanes") or LANES,
                                  options.get("narrow_indices", True))
        plans: dict[str, NodePlan] = {}
        arguments: dict[str, list[Argument]] = {}
        for ref in nodes:
            plans[str(ref)] = self._plan(module, ref, renderer, arguments)
        rendered = renderer.finish()
        origins = _explain_lines(rendered, module, plans)
        metadata = {"nodes": {k: p.to_json() for k, p in plans.items()},
                    "entries": {e: [a.to_json() for a in args] for e, args in arguments.items()},
                    "features": sorted(rendered.features)}
        files = {SOURCE_FILE: rendered.text.encode(), MODULE_FILE: print_module(module).encode(),
                 ORIGINS_FILE: json.dumps(origins).encode()}
        artifact = Artifact(self.name, files, metadata)
        if self.availability().available:
            self._build(artifact, module, options)  # errors now, and a warm cache for load
        return artifact

    def _plan(self, module: Module, ref: NodeRef, renderer, arguments: dict) -> NodePlan:
        node = module.graph(ref.graph).node(ref.node)
        if isinstance(node.body, ConstantBody):
            return NodePlan("constant")
        if not isinstance(node.body, KernelBody):
            raise TargetError(f"gpu_opencl: node '{node.name}' of graph '@{ref.graph}' is a "
                              f"{type(node.body).__name__}; only kernel and constant nodes "
                              "reach the code generator (tensor ops are lowered first)")
        function, rank = node.body.function, max(len(node.replication), 1)
        entry = renderer.entry_name(function, rank)
        if entry not in arguments:
            renderer.add_entry(function, rank)
            arguments[entry] = entry_arguments(module.function(function), rank)
        return NodePlan("kernel", function, entry, rank, synchronizes(module, function),
                        **renderer.work_item_shape(entry))

    def load(self, artifact: Artifact, options: dict) -> Device:
        from hpvm.ir.text import parse_module
        module = parse_module(artifact.files[MODULE_FILE].decode(), filename=MODULE_FILE)
        runtime, program = self._build(artifact, module, options)
        plans = {k: NodePlan(**v) for k, v in artifact.metadata["nodes"].items()}
        arguments = {e: [Argument(**a) for a in args]
                     for e, args in artifact.metadata["entries"].items()}
        return OpenCLDevice(runtime, program, module, plans, arguments, options,
                            build_variant=lambda wide, true_tests: self._build(
                                artifact, module, options, wide, true_tests)[1])

    def _build(self, artifact: Artifact, module: Module, options: dict, wide: bool = False,
               true_tests: tuple[str, ...] = ()):
        """The device's runtime and the program built for it (indexing
        buffers in ``long`` if ``wide``, else in ``int``; the launch tests
        ``true_tests`` true, the others false: hpvm_opencl.launch_tests)."""
        from hpvm_opencl.devices import runtime_for, select_device
        from hpvm_opencl.launch_tests import launch_flags
        from hpvm_opencl.program import build_options, build_program
        runtime = runtime_for(select_device(options))
        _check_features(artifact, module, runtime.info)
        origins = json.loads(artifact.files[ORIGINS_FILE].decode())
        program = build_program(runtime, artifact.files[SOURCE_FILE].decode(),
                                build_options(options, wide) + launch_flags(module, true_tests),
                                lambda n: origins[n - 1] if 1 <= n <= len(origins) else "?")
        return runtime, program


def on_gpu(options: dict) -> bool:
    """Whether the OpenCL device ``options`` select is a GPU (False where
    none is usable: nothing runs here anyway)."""
    import pyopencl as cl
    from hpvm_opencl.devices import select_device
    try:
        return bool(select_device(options).type & cl.device_type.GPU)
    except (HpvmError, cl.Error):
        return False


def resident_work_items(options: dict) -> int:
    """The work items the device ``options`` select keeps in flight:
    RESIDENT_ITEMS for each compute unit."""
    return RESIDENT_ITEMS * compute_units(options)


def compute_units(options: dict) -> int:
    """The compute units of the device ``options`` select."""
    from hpvm_opencl.devices import device_info, select_device
    return device_info(select_device(options)).compute_units


def default_per_item(options: dict) -> int:
    """The ``per_item`` of a compile that names none: PER_ITEM on a GPU (it
    needs several loads in flight per work item to reach its bandwidth),
    1 on a CPU device (PoCL packs work items into vector lanes itself; the
    loop only lengthened its compiles)."""
    return PER_ITEM if on_gpu(options) else 1


def _exact_division_in_double(options: dict) -> bool:
    """Whether f32 divisions by constants go through double precision
    (renderer.py says why): on a device with cl_khr_fp64, without fast
    math (which divides approximately anyway)."""
    import pyopencl as cl
    from hpvm_opencl.devices import device_info, select_device
    if options.get("fast_math"):
        return False
    try:
        return device_info(select_device(options)).fp64
    except (HpvmError, cl.Error):
        return False


def _check_features(artifact: Artifact, module: Module, info) -> None:
    """A clear error when the code needs what the device lacks."""
    from hpvm_opencl.renderer import OpenCLRenderer
    for feature in artifact.metadata["features"]:
        if feature not in FEATURE_NEEDS:
            continue
        attribute, what, extension = FEATURE_NEEDS[feature]
        if getattr(info, attribute):
            continue
        users = []
        for key, plan in artifact.metadata["nodes"].items():
            if plan["kind"] != "kernel":
                continue
            renderer = OpenCLRenderer(module, constant_division_in_double=True)
            renderer.add_entry(plan["function"], plan["rank"])
            if feature in renderer.finish().features:
                users.append(f"'{key}'")
        raise TargetError(f"gpu_opencl: node(s) {', '.join(users)} use {what}, but the OpenCL "
                          f"device {info.describe()} lacks {extension} (fix: use a device that "
                          "has it (options platform=/device=), change the types, or place "
                          "those nodes on cpu with hint cpu)")


def _explain_lines(rendered, module: Module, plans: dict[str, NodePlan]) -> list[str]:
    """Per generated line: the nodes and IR statement it comes from."""
    users: dict[str, list[str]] = {}
    for key, plan in plans.items():
        if plan.kind == "kernel":
            users.setdefault(plan.function, []).append(key)
    described: dict[tuple, str] = {}
    lines = []
    for origin in rendered.writer.origins:
        cache_key = (origin.function, id(origin.stmt))
        if cache_key not in described:
            nodes = users.get(origin.function)
            prefix = f"node(s) {', '.join(nodes)}, " if nodes else ""
            described[cache_key] = prefix + origin.describe()
        lines.append(described[cache_key])
    return lines
