"""Executables: a compiled program ready to run on its devices.

``hpvm.compile(program, targets=[...])`` places every leaf node, prepares a
per-target copy of the module (tensor ops lowered where the target does not
take them, the target's own passes), asks each target's code generator for
an Artifact, and returns an :class:`Executable`.  Executables run
synchronously (``exe(**inputs)``), asynchronously (``launch`` / ``wait``),
or as a stream (``start`` / ``push`` / ``pop``), and save to a folder that
``load`` reads back in another process; pickled, they travel as that folder
(to process pools, Ray tasks).
"""
from __future__ import annotations

import itertools
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import HpvmError
from ..ir.draw import svg
from ..ir.graph import Module
from ..ir.text import parse_module, print_module
from ..options import resolve_compile_options
from ..registry import get_registry
from ..saved_folder import (
    DAMAGED_FIX, SavedFolderError, read_checked, read_manifest, safe_name, write_files, write_json,
)
from ..target import Artifact, Device
from .approximations import ApproximationsMixin, runs_active
from .bound_run import BoundRun, no_static_schedule
from .compiler import build
from .execution import Frame, Report
from .flatten import flatten
from .device_arrays import HOST_OUTPUTS, DeviceArrays, device_array, output_place
from .donation import take_donations, usable_donations
from .inputs import InputChecker, validate_inputs
from .memory import ALWAYS, CopyStats, MemoryTracker, Value
from .placement import Placement
from .scheduler import DagScheduler
from .static_run import StaticProgram, static_schedule_fits
from .task_plan import plan_program

EXECUTABLE_FORMAT = 2
"""2: every file carries its sha256 in the manifests."""
MODULE_FILE = "module.hpvm"
OUTPUTS_KEYWORD = "outputs"
"""The keyword of a call that says where its outputs go (device_arrays.py)."""


def compile(program, targets: Sequence[str] | None = None, options: dict | None = None,
            registry=None, notes: Sequence[str] = ()) -> "Executable":
    """The Executable of ``program`` compiled for the ordered ``targets``
    (compiler.build says how; a single target may be given as its name).
    ``hpvm.compile`` is this, plus tuned configurations (hpvm.api)."""
    return Executable(*build(program, targets, options, registry, notes))


class Launch:
    """A run in flight; ``wait()`` returns its outputs."""

    def __init__(self, future):
        self._future = future

    def done(self) -> bool:
        return self._future.done()

    def wait(self, timeout: float | None = None) -> dict:
        return self._future.result(timeout)


class Executable(ApproximationsMixin):
    def __init__(self, module: Module, placement: Placement,
                 artifacts: dict[str, Artifact], options: dict | None = None,
                 registry=None):
        self.module = module
        self.placement = placement
        self.artifacts = artifacts
        self.options = dict(options or {})
        self.config: dict | None = None
        """The tuned configuration it was compiled with (hpvm.tune), if any."""
        self._registry = registry
        self._program = flatten(module, frozenset(placement.partitions))
        self._plan = plan_program(module, self._program, placement.task_targets)
        self._devices: dict[str, Device] | None = None
        self._lock = threading.Lock()
        self._scheduler: DagScheduler | None = None
        self._last_report = Report()
        self._stream: dict | None = None
        self._frame_ids = itertools.count()
        self._static: StaticProgram | None | bool = None
        """The static schedule (static_run.py); False where it does not fit."""
        self._inputs = InputChecker(module.root_graph)
        self._input_names = frozenset(p.name for p in module.root_graph.params if p.reads)
        self._arrays: DeviceArrays | None = None
        self._init_approximations()

    # -- running -----------------------------------------------------------
    def __call__(self, **inputs) -> dict:
        """One run: ``exe(x=array, ...)`` returns the outputs by name, numpy
        arrays on the host; ``outputs="device"`` leaves them on the devices
        that made them (device_arrays.py), unless the program has an input
        named ``outputs`` (then use :meth:`run`)."""
        return self._call(inputs, self._outputs_keyword(inputs))  # inputs: a dict of its own

    def run(self, inputs: Mapping[str, Any], outputs: str = HOST_OUTPUTS) -> dict:
        """One run on ``inputs`` (name -> value: numpy arrays, arrays of
        other libraries in host memory or on a device, scalars), as
        ``exe(**inputs)``; names need not be Python identifiers."""
        return self._call(dict(inputs), output_place(outputs))

    def _call(self, inputs: dict, outputs: str) -> dict:
        donated = take_donations(inputs)
        if self._goal is not None:
            return self._adapting_call(inputs, outputs)
        return self._runner._run(inputs, outputs, donated)

    def launch(self, **inputs) -> Launch:
        """Start a run and return at once (``outputs=`` as for a call)."""
        return self._launch(inputs, self._outputs_keyword(inputs))

    @runs_active
    def _launch(self, inputs: dict, outputs: str) -> Launch:
        take_donations(inputs)  # a launched run copies its inputs (donation.py)
        return Launch(self._start_run(inputs, outputs))

    @runs_active
    def bind(self, **inputs) -> BoundRun:
        """A bound run (bound_run.py): ``run = exe.bind(x=a, outputs="device")``
        fixes the inputs (the objects, read as they are at each call) and
        the output arrays once; ``run()`` then runs the program and returns
        the same outputs, overwritten, at every call, with none of a call's
        checks (loops refilling the same buffers)."""
        if self._goal is not None:
            raise HpvmError("bind: this executable adapts to a latency goal, which a bound "
                            "run cannot follow (fix: set_goal(None) first, or call it)")
        outputs = self._outputs_keyword(inputs)
        take_donations(inputs)  # a bound run reads its inputs at every call
        checked, static, report = self._checked(inputs)
        if static is None:
            raise no_static_schedule(sorted(self.artifacts))
        if report.bytes_copied:
            raise HpvmError("bind: an input lives on a device where no node of this program "
                            "runs, and would be read as the copy made now (fix: copy it to "
                            "the host, or to this program's device with exe.device_array)")
        return BoundRun(static, inputs, checked, outputs, self._keep_report)

    def _keep_report(self, report: Report) -> None:
        self._last_report = report

    def device_array(self, array, target: str | None = None):
        """``array`` copied to the device of ``target`` (by default the one
        target of this executable with memory of its own), as that
        device's own array type: a ``pyopencl.array.Array`` of
        gpu_opencl's context, a torch tensor on aten's CUDA device.  Runs
        take it as an input without a copy."""
        return device_array(self._get_devices(), array, target)

    @runs_active
    def stage(self, **inputs) -> dict:
        """``inputs`` copied once to the devices that read them, for runs
        that reuse them: ``staged = exe.stage(x=images)`` then
        ``exe(**staged)`` as often as needed, with no copy in.  Staged
        inputs belong to this executable and its configuration in use."""
        graph = self.module.root_graph
        checked = validate_inputs(graph, inputs, required=tuple(inputs),
                                  arrays=self._device_arrays())
        tracker = MemoryTracker(self._get_devices())
        readers: dict[str, set[str]] = {}
        for plan in self._plan.tasks:
            for _, source, _ in plan.arguments:
                if source.task is None:
                    readers.setdefault(source.port, set()).add(plan.target)
        staged = {}
        for name, value in checked.items():
            if isinstance(value, np.ndarray):
                value = tracker.from_host(value, consumers=ALWAYS)  # never freed by a run
                for target in sorted(readers.get(name, ())):
                    tracker.acquire(value, target, CopyStats())
            staged[name] = value
        return staged

    @runs_active
    def start(self, **fixed_inputs) -> None:
        """Begin a stream: the non-streaming inputs, fixed for every frame."""
        graph = self.module.root_graph
        streamed = {b.param for b in graph.bind_ins if b.streaming}
        fixed_names = tuple(p.name for p in graph.params if p.reads and p.name not in streamed)
        copied = CopyStats()
        checked = validate_inputs(graph, fixed_inputs, required=fixed_names,
                                  arrays=self._device_arrays(), copied=copied)
        report = Report()
        report.add_copies("<inputs>", copied)
        tracker = MemoryTracker(self._get_devices())
        tracker.bytes_copied = copied.total
        fixed = {name: tracker.from_host(v, ALWAYS) if isinstance(v, np.ndarray) and v.ndim
                 else v for name, v in checked.items()}  # fixed for the whole stream
        self._stream = {"fixed": fixed, "streamed": tuple(sorted(streamed)), "tracker": tracker,
                        "report": report, "frames": deque(), "previous": None, "count": 0}

    @runs_active
    def push(self, **frame_inputs) -> None:
        """Feed one frame; stages of successive frames overlap."""
        stream = self._require_stream()
        copied = CopyStats()
        checked = validate_inputs(self.module.root_graph, frame_inputs, required=stream["streamed"],
                                  arrays=self._device_arrays(), copied=copied)
        frame = Frame(next(self._frame_ids), self._plan, self._get_devices(),
                      stream["tracker"], stream["report"], serial=self._serial)
        frame.report.add_copies("<inputs>", copied, frame.id)
        stream["tracker"].bytes_copied += copied.total
        stream["count"] += 1
        future = frame.start(self._get_scheduler(), {**stream["fixed"], **checked},
                             pinned=set(checked), previous=stream["previous"])
        stream["previous"] = frame
        stream["frames"].append(future)

    @runs_active
    def pop(self, timeout: float | None = None) -> dict:
        """Outputs of the oldest frame not popped yet (waits for it)."""
        stream = self._require_stream()
        if not stream["frames"]:
            raise HpvmError("pop() without a pending frame: push(...) a frame first")
        outputs = stream["frames"].popleft().result(timeout)
        self._last_report = stream["report"]
        return outputs

    def close(self) -> None:
        """End the stream (pending frames are finished first) and release
        the worker threads."""
        if self._stream is not None:
            for future in self._stream["frames"]:
                future.result()
            self._stream = None
        if self._scheduler is not None:
            self._scheduler.shutdown()
            self._scheduler = None
        self._close_variants()

    @runs_active
    def report(self) -> Report:
        """Per node of the last run: target, time, and the copies it caused."""
        return self._last_report

    # -- persistence ---------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """Write the portable module, the placement and every artifact, with
        each file's sha256 (checked by ``load``)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        digests = write_files(folder, {MODULE_FILE: print_module(self.module).encode()})
        for name, artifact in self.artifacts.items():
            artifact.save(folder / "artifacts" / name)
        manifest = {"format": EXECUTABLE_FORMAT, "placement": self.placement.to_json(),
                    "options": self.options, "targets": sorted(self.artifacts), "sha256": digests,
                    "config": self.config, "approximations": self.approximations}
        write_json(folder / "executable.json", manifest)

    @classmethod
    def load(cls, folder: str | Path, registry=None) -> "Executable":
        """Read back what ``save`` wrote.  It holds code for the machine:
        load only executables from authors you trust (see saved_folder)."""
        folder = Path(folder)
        manifest_path = folder / "executable.json"
        if not manifest_path.exists():
            raise HpvmError(f"{folder}: not a saved executable (no executable.json); "
                            "make one with hpvm compile ... -o DIR")
        manifest = read_manifest(manifest_path, {"placement": dict, "options": dict,
                                                 "targets": list})
        if manifest.get("format") != EXECUTABLE_FORMAT:
            raise HpvmError(f"{folder}: executable format {manifest.get('format')} is not "
                            f"{EXECUTABLE_FORMAT}; recompile it with this hpvm")
        digests = manifest.get("sha256") if isinstance(manifest.get("sha256"), dict) else {}
        text = read_checked(folder, MODULE_FILE, digests.get(MODULE_FILE), manifest_path)
        module = parse_module(text.decode(errors="replace"), filename=str(folder / MODULE_FILE))
        artifacts = {name: Artifact.load(safe_name(folder / "artifacts", name, manifest_path))
                     for name in manifest["targets"]}
        try:
            placement = Placement.from_json(manifest["placement"])
        except (KeyError, TypeError, ValueError) as error:
            raise SavedFolderError(f"{manifest_path}: 'placement' is malformed ({error!r}) "
                                   f"(fix: {DAMAGED_FIX})") from None
        exe = cls(module, placement, artifacts, manifest["options"], registry)
        exe.config = manifest.get("config") if isinstance(manifest.get("config"), dict) else None
        if isinstance(manifest.get("approximations"), dict):
            exe.attach_approximations(manifest["approximations"])
        return exe

    # -- notebooks: Jupyter shows an executable as its DFG and placement ------
    def _repr_svg_(self) -> str:
        """The dataflow graph, each node labelled with its target."""
        return svg(self.module, self.placement.node_targets())

    def _repr_html_(self) -> str:
        """The placement: node, target and why, and the notes."""
        return self.placement.html()

    def __reduce__(self):
        # Pickled as its saved form: no device, module or thread travels; the
        # receiving process loads it as hpvm.load does, with its own devices,
        # compile cache and installed targets (never a registry given here).
        with tempfile.TemporaryDirectory(prefix="hpvm-pickle-") as folder:
            self.save(folder)
            files = {path.relative_to(folder).as_posix(): path.read_bytes()
                     for path in sorted(Path(folder).rglob("*")) if path.is_file()}
        return _loaded_from_files, (files,)

    # -- internals -----------------------------------------------------------
    def _run(self, inputs: dict, outputs: str = HOST_OUTPUTS,
             donated: frozenset[str] = frozenset()) -> dict:
        """One run, the calling thread working on it (not only waiting);
        ``donated``: inputs the caller gave up (donation.py)."""
        static = self._static or None  # decided by the first run
        if static is not None and not donated:
            report = Report()
            result = static.run_again(inputs, report, outputs)
            if result is not None:
                self._last_report = report
                return result
        checked, static, report = self._checked(inputs)
        self._last_report = report
        if static is not None:
            donated = usable_donations(donated, checked)
            # a call that donates is not kept to be recognised: the next
            # call of the same arrays may not donate them
            return static.run(checked, report, outputs, given=None if donated else inputs,
                              donated=donated)
        frame = self._new_frame(report)
        return frame.start(self._get_scheduler(), checked, pinned=set(checked),
                           run_here=True, outputs=outputs).result()

    def _start_run(self, inputs: dict, outputs: str = HOST_OUTPUTS):
        """Check ``inputs`` (nothing runs if they are wrong) and start a
        run on the worker threads; returns the future of its outputs."""
        checked, static, report = self._checked(inputs)
        self._last_report = report
        if static is not None:
            return self._get_scheduler().add(("static", next(self._frame_ids)), (),
                                             lambda: static.run(checked, report, outputs))
        frame = self._new_frame(report)
        return frame.start(self._get_scheduler(), checked, pinned=set(checked), run_here=False,
                           outputs=outputs)

    def _checked(self, inputs: dict) -> tuple[dict, StaticProgram | None, Report]:
        """``inputs`` checked, the static schedule that runs them, if any,
        and the run's report (with the copies of device arrays to the host
        that taking the inputs made)."""
        graph = self.module.root_graph
        if graph.is_streaming:
            raise HpvmError(f"graph '@{graph.name}' is a streaming pipeline: use "
                            "start(...), push(...) and pop() instead of calling it")
        copied = CopyStats()
        checked = self._inputs.check(inputs, self._device_arrays(), copied)
        report = Report()
        report.add_copies("<inputs>", copied)
        static = self._static_program()
        if static is not None and any(isinstance(v, Value) for v in checked.values()):
            taken = static.staged_inputs(checked)
            if taken is None:  # staged where the schedule does not look
                return checked, None, report
            checked = taken
        return checked, static, report

    def _outputs_keyword(self, inputs: dict) -> str:
        """The ``outputs=`` of a call, taken out of ``inputs`` (unless the
        program has an input of that name) and checked."""
        if OUTPUTS_KEYWORD in inputs and OUTPUTS_KEYWORD not in self._input_names:
            return output_place(inputs.pop(OUTPUTS_KEYWORD))
        return HOST_OUTPUTS

    def _device_arrays(self) -> DeviceArrays:
        if self._arrays is not None:  # made once; every run asks
            return self._arrays
        with self._lock:
            if self._arrays is None:
                self._arrays = DeviceArrays(self._get_devices_locked())
            return self._arrays

    def _static_program(self) -> StaticProgram | None:
        """The static schedule of runs, where the placement allows one."""
        if self._static is not None:  # decided once; every run asks
            return self._static or None
        devices = self._get_devices()
        with self._lock:
            if self._static is None:
                fits = static_schedule_fits(self._plan, devices, self._serial)
                self._static = StaticProgram(self._plan, devices, self.module) if fits \
                    else False
            return self._static or None

    def _new_frame(self, report: Report) -> Frame:
        self._last_report = report
        devices = self._get_devices()
        tracker = MemoryTracker(devices)
        tracker.bytes_copied = report.bytes_copied  # the device arrays' copies to the host
        return Frame(next(self._frame_ids), self._plan, devices, tracker, report,
                     serial=self._serial)

    @property
    def _serial(self) -> bool:
        """The compile option task_parallelism is off."""
        return not self.options.get("task_parallelism", True)

    def _require_stream(self) -> dict:
        if self._stream is None:
            raise HpvmError("no stream is open: call start(...) before push/pop")
        return self._stream

    def _get_scheduler(self) -> DagScheduler:
        with self._lock:
            if self._scheduler is None:
                self._scheduler = DagScheduler()
            return self._scheduler

    def _get_devices(self) -> dict[str, Device]:
        with self._lock:
            return self._get_devices_locked()

    def _get_devices_locked(self) -> dict[str, Device]:
        if self._devices is None:
            registry = self._registry or _default_registry()
            options = resolve_compile_options(self.options, list(self.artifacts), registry,
                                              strict=False)
            self._devices = {name: registry.target(name).target.load(artifact, options[name])
                             for name, artifact in self.artifacts.items()}
        return self._devices

    def __del__(self):
        # Never wait here: a collector may run this in any thread, even one
        # the pool is starting.  Idle workers exit once the pool is shut.
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)


def _loaded_from_files(files: dict[str, bytes]) -> Executable:
    """The Executable whose saved folder held ``files`` (path -> content):
    how a pickled executable is loaded."""
    with tempfile.TemporaryDirectory(prefix="hpvm-pickle-") as folder:
        for name, data in files.items():
            path = Path(folder, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return Executable.load(folder)


def _default_registry():
    return get_registry()
