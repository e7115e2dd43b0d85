"""The 'fpga_aoc' target: Intel FPGAs through the AOC OpenCL compiler, in
HPVM2FPGA's design.

Code generator: the placed kernel nodes are sequentialized (their
replication becomes ``ivdep`` loops) and rendered as single-work-item
OpenCL kernels (renderer.py); the artifact holds ``kernels.cl``, the
sequentialized module and the host plan (per node: its kernel entry and
arguments).  Toolchain modes, chosen at compile time and said by
``availability()``, the placement report and every timing:

- ``aoc`` on PATH: its report (``aoc -rtl``) joins the artifact, and with
  ``aoc_compile="full"`` the bitstream, which runs on an Intel FPGA OpenCL
  platform when one is present (the hardware);
- otherwise emulation: the same kernels built and run as single work items
  on any OpenCL device (PoCL, NVIDIA), or, where none works, the
  sequentialized kernels compiled for the host by the cpu target.

Cost model: ``estimate`` (model.py, estimate.py: II, latency, cycles per
loop, node and DFG, Fmax and area against a device profile), used by
``hpvm tune --mode estimate`` without running anything.
"""
from __future__ import annotations

import json

from hpvm.errors import TargetError
from hpvm.ir.graph import ConstantBody, Graph, KernelBody, Module, Node, TensorBody
from hpvm.ir.analysis import uses_barrier
from hpvm.ir.kernel import For
from hpvm.options import Option
from hpvm.target import Artifact, Availability, Device, Knob, NodeRef, Target

from .prepare import prepared, sequentialized
from .profiles import DEFAULT_PROFILE, PROFILES

SOURCE_FILE = "kernels.cl"
MODULE_FILE = "module.hpvm"
PLAN_FILE = "host_plan.json"
HOST_PREFIX = "host/"
EMULATORS = ("auto", "opencl", "host")
INSTANCE_UNROLL = (1, 2, 4, 8, 16, 32, 64)

OPTIONS = [
    Option("device_profile", str, DEFAULT_PROFILE, "the FPGA the cost model describes",
           choices=tuple(PROFILES)),
    Option("emulator", str, "auto", "without FPGA hardware, run the kernels on an OpenCL "
           "device ('opencl'), compiled for the host ('host'), or the first that works ('auto')",
           choices=EMULATORS),
    Option("aoc_compile", str, "report", "with aoc on PATH: 'report' (aoc -rtl: reports in "
           "minutes) or 'full' (the .aocx bitstream: hours)", choices=("report", "full")),
    Option("board", object, None, "aoc -board= (default: the SDK's default board)"),
    Option("aoc_flags", list, (), "more aoc flags"),
    Option("platform", object, None, "OpenCL platform of the emulation: an index or part of "
           "its name"),
    Option("device", object, None, "OpenCL device of the emulation: an index or part of its "
           "name"),
    Option("unroll_instances", object, None, "unroll factor of a node's innermost instance "
           "loop (made by sequentialize): an int for every node, or a dict node -> int"),
    Option("input_buffering", object, None, "copy a node's fixed-size read-only inputs on "
           "chip at the kernel's start (HPVM2FPGA's IB): a bool for every node, or a dict "
           "node -> bool"),
    Option("aoc_estimates", bool, True, "with aoc on PATH, estimates read loop II, area (and "
           "the clock, after a full compile) from aoc -rtl's report (minutes per design)"),
    Option("task_parallelism", bool, True, "a command queue per concurrently runnable kernel, "
           "and the model's DFG time as its critical path (on); one queue, the sum (off)"),
    Option("asynchronous", bool, True, "launches return at once, the DFG's dependencies as "
           "OpenCL events between the kernels (on); the host waits for each kernel (off)"),
]


class FpgaAocTarget(Target):
    name = "fpga_aoc"
    description = ("Intel FPGAs through the AOC OpenCL compiler (single-work-item kernels), "
                   "emulated when the tool is absent; a performance and area model")
    default_pipeline = "argument-privatisation,loop-fusion,node-fusion,dce"

    def availability(self) -> Availability:
        from .aoc import find_aoc, fpga_platform_present
        aoc = find_aoc()
        emulation = _emulation_device({})
        if aoc and fpga_platform_present():
            return Availability.yes(f"aoc at {aoc} with an Intel FPGA OpenCL platform: hardware")
        if emulation is None and not _host_emulation_available():
            return Availability.no("no aoc, no working OpenCL device and no cpu target to "
                                   "emulate the kernels on (fix: install hpvm-cpu, or an OpenCL "
                                   "driver, or Intel's FPGA SDK for OpenCL)")
        where = f"on {emulation}" if emulation else "on the host (cpu target)"
        tool = f"aoc at {aoc} writes reports" if aoc else "no aoc on PATH"
        return Availability.yes(f"EMULATION {where}: results are exact, timings are not the "
                                f"FPGA's ({tool}; estimates from the model of "
                                f"{PROFILES[DEFAULT_PROFILE].description})")

    def options(self) -> list[Option]:
        return OPTIONS

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        if isinstance(node.body, (ConstantBody, TensorBody)):
            return True
        return isinstance(node.body, KernelBody) and not uses_barrier(module, node.body.function)

    def knobs(self, module: Module, nodes: list[NodeRef]) -> list[Knob]:
        """Per replicated kernel node: the unroll factor of its innermost
        instance loop (HPVM2FPGA's LU on the loops sequentialize makes:
        several instances per cycle, at that many times the area); per node
        with fixed-size inputs read in loops: input buffering (IB).  Only
        the first node of a copy group (prepare.py) has knobs."""
        from .prepare import bufferable, copy_groups, function_of, replicated_kernel
        sequential = sequentialized(module, nodes)
        buffered = {name.partition(".")[0] for name in bufferable(sequential)}
        knobs = []
        for ref in sorted(set(copy_groups(module, nodes).values()), key=nodes.index):
            if replicated_kernel(module, ref):
                knobs.append(Knob("unroll_instances", INSTANCE_UNROLL, 1, ref))
            if function_of(sequential, ref) in buffered:
                knobs.append(Knob("input_buffering", (False, True), False, ref))
        return knobs

    # -- code generation -----------------------------------------------------
    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from hpvm.ir.text import print_module
        module = prepared(module, nodes, options)
        rendered, plan = _render(module, nodes)
        files = {SOURCE_FILE: rendered.text.encode(), MODULE_FILE: print_module(module).encode(),
                 PLAN_FILE: json.dumps(plan, indent=1).encode()}
        metadata = {"nodes": plan, "features": sorted(rendered.features)}
        files.update(self._toolchain(rendered.text, module, nodes, options, metadata))
        return Artifact(self.name, files, metadata)

    def _toolchain(self, source: str, module: Module, nodes: list[NodeRef], options: dict,
                   metadata: dict) -> dict[str, bytes]:
        """Run aoc if present; decide how the artifact runs; say so."""
        from .aoc import find_aoc, fpga_platform_present, run_aoc
        files: dict[str, bytes] = {}
        notes = []
        full = options.get("aoc_compile", "report") == "full"
        if find_aoc():
            files.update(run_aoc(source, full, options.get("board"),
                                 list(options.get("aoc_flags") or ())))
            notes.append("aoc " + ("compiled the bitstream (aoc/kernels.aocx)" if full else
                                   "wrote its reports (aoc/reports)"))
        if full and fpga_platform_present():
            metadata["mode"] = "hardware"
        else:
            emulator = options.get("emulator", "auto")
            device = None if emulator == "host" else _emulation_device(options)
            if device is None and emulator == "opencl":
                raise TargetError("fpga_aoc: emulator='opencl' but no OpenCL device can build "
                                  "kernels here (fix: emulator='host' or 'auto', or install an "
                                  "OpenCL driver)")
            if device is not None:
                metadata["mode"] = "opencl-emulation"
                notes.append(f"EMULATION: single-work-item kernels on {device}; timings are "
                             "not FPGA timings (hpvm tune --mode estimate uses the model)")
            else:
                metadata["mode"] = "host-emulation"
                files.update(_host_artifact_files(module, nodes))
                notes.append("EMULATION on the host: the sequentialized kernels compiled by the "
                             "cpu target (no usable OpenCL device); timings are not FPGA timings")
        metadata["notes"] = notes
        return files

    def load(self, artifact: Artifact, options: dict) -> Device:
        from hpvm.ir.text import parse_module
        mode = artifact.metadata.get("mode")
        if mode == "host-emulation":
            return _host_device(artifact)
        from hpvm_opencl.devices import runtime_for, select_device
        from hpvm_opencl.device import NodePlan
        from hpvm_opencl.layout import entry_arguments
        from hpvm_opencl.program import build_program
        from .device import SingleWorkItemDevice
        module = parse_module(artifact.files[MODULE_FILE].decode(), filename=MODULE_FILE)
        runtime = runtime_for(select_device(options))
        source = artifact.files[SOURCE_FILE].decode()
        if mode == "hardware":
            import pyopencl as cl
            program = cl.Program(runtime.context, [runtime.device],
                                 [artifact.files["aoc/kernels.aocx"]]).build()
        else:
            program = build_program(runtime, source, ["-cl-fp32-correctly-rounded-divide-sqrt", "-w"])
        plans, arguments = {}, {}
        for key, entry in artifact.metadata["nodes"].items():
            if entry.get("constant"):
                plans[key] = NodePlan("constant")
                continue
            plans[key] = NodePlan("kernel", entry["function"], entry["entry"], 0)
            arguments[entry["entry"]] = entry_arguments(module.function(entry["function"]), 0)
        options = {**options, "asynchronous": options.get("asynchronous", True)}
        return SingleWorkItemDevice(runtime, program, module, plans, arguments, options,
                                    emulated=mode != "hardware")

    # -- cost model ------------------------------------------------------------
    def estimate(self, module: Module, nodes: list[NodeRef], options: dict,
                 sizes: dict | None = None) -> dict:
        from .estimate import estimate_program
        profile = PROFILES[options.get("device_profile", DEFAULT_PROFILE)]
        sequential = prepared(module, nodes, options)
        report = None
        if options.get("aoc_estimates", True):
            report = _aoc_report(sequential, nodes, options)
        return estimate_program(sequential, nodes, sizes or {}, profile,
                                options.get("task_parallelism", True), report)


def _render(module: Module, nodes: list[NodeRef]):
    """The single-work-item OpenCL of ``nodes`` of the sequentialized
    ``module`` and the host plan (per node: its kernel entry)."""
    from .renderer import AocRenderer
    renderer = AocRenderer(module)
    plan, entries = {}, {}
    for ref in nodes:
        node = module.graph(ref.graph).node(ref.node)
        if isinstance(node.body, KernelBody):
            function = node.body.function
            if function not in entries:   # nodes running one function share its kernel
                entries[function] = renderer.add_entry(function, 0)
            plan[str(ref)] = {"function": function, "entry": entries[function]}
        elif isinstance(node.body, ConstantBody):
            plan[str(ref)] = {"constant": True}
        else:
            raise TargetError(f"fpga_aoc: node '{ref}' is a {type(node.body).__name__}; "
                              "only kernel and constant nodes reach the code generator")
    return renderer.finish(), plan


def _aoc_report(module: Module, nodes: list[NodeRef], options: dict):
    """aoc -rtl's report of the generated kernels, its loops keyed by
    (function, loop id); None without aoc."""
    from hpvm.passes.loop_unroll import loops_by_id
    from .aoc import find_aoc, run_aoc
    from .aoc_report import read_report
    if not find_aoc():
        return None
    rendered, _ = _render(module, nodes)
    report = read_report(run_aoc(rendered.text, False, options.get("board"),
                                 list(options.get("aoc_flags") or ())))
    if report is None:
        return None
    by_line = {}
    for line, measured in report.loops.items():
        origin = rendered.origin_of(line)
        if origin is None or not isinstance(origin.stmt, For):
            continue
        ids = loops_by_id(module.function(origin.function))
        loop_id = next((i for i, loop in ids.items() if loop is origin.stmt), None)
        if loop_id is not None:
            by_line[loop_id] = measured
    report.loops = by_line
    return report


def _emulation_device(options: dict) -> str | None:
    """The OpenCL device the emulation would use, described; None when
    pyopencl or a working device is missing."""
    try:
        from hpvm_opencl.devices import device_info, select_device, usable_devices
        if not usable_devices():
            return None
        return device_info(select_device(options)).describe()
    except (ImportError, TargetError):
        return None


def _host_emulation_available() -> bool:
    from hpvm.registry import get_registry
    try:
        return get_registry().target("cpu").availability.available
    except Exception:  # hpvm-cpu not installed
        return False


def _host_artifact_files(module: Module, nodes: list[NodeRef]) -> dict[str, bytes]:
    from hpvm.registry import get_registry
    if not _host_emulation_available():
        raise TargetError("fpga_aoc: no OpenCL device works here and the cpu target is not "
                          "available to emulate the kernels on the host (fix: pip install "
                          "hpvm-cpu, or an OpenCL driver)")
    cpu = get_registry().target("cpu").target
    artifact = cpu.compile(_without_unroll_hints(module), nodes, {})
    files = {HOST_PREFIX + name: data for name, data in artifact.files.items()}
    files[HOST_PREFIX + "metadata.json"] = json.dumps(artifact.metadata).encode()
    return files


def _without_unroll_hints(module: Module) -> Module:
    """The module with every loop's ``unroll`` hint dropped: the host
    emulation computes what the FPGA computes; unrolling 64 instances
    around fully unrolled loops would only make LLVM slow."""
    import dataclasses
    from hpvm.ir.visit import rewrite

    def drop(node):
        if isinstance(node, For) and node.unroll is not None:
            return dataclasses.replace(node, unroll=None)
        return None
    functions = {name: dataclasses.replace(f, body=rewrite(f.body, drop))
                 for name, f in module.functions.items()}
    return dataclasses.replace(module, functions=functions)


def _host_device(artifact: Artifact) -> Device:
    from hpvm.registry import get_registry
    from .device import HostEmulationDevice
    files = {name[len(HOST_PREFIX):]: data for name, data in artifact.files.items()
             if name.startswith(HOST_PREFIX) and name != HOST_PREFIX + "metadata.json"}
    metadata = json.loads(artifact.files[HOST_PREFIX + "metadata.json"].decode())
    cpu = get_registry().target("cpu").target
    return HostEmulationDevice(cpu.load(Artifact("cpu", files, metadata), {}))
