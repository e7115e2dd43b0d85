"""What a target is: the objects a plugin hands to hpvm.

A :class:`Target` bundles the three things a vendor supplies:

- a **matcher** (:meth:`Target.claims`): may this target run a node?
- a **code generator** (:meth:`Target.compile`): IR of the nodes placed on
  the target to an :class:`Artifact`;
- a **runtime shim** (:meth:`Target.load`): from an Artifact to a
  :class:`Device` that allocates, copies, launches and waits.

and optionally tuning knobs, a cost model and extra passes.  Subclass it and
override what your device needs; the defaults describe a target that claims
nothing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Hashable

import numpy as np

from .artifact_files import ArtifactFiles
from .errors import Diagnostic, ExecutionError, Location
from .host_arrays import aligned_zeros
from .ir.graph import Graph, Module, Node
from .options import Option
from .saved_folder import read_checked, read_manifest, write_files, write_json

def cache_directory(target: str) -> Path:
    """Where ``target`` keeps its compile cache: ``$HPVM_CACHE_DIR/<target>``,
    else ``$XDG_CACHE_HOME/hpvm/<target>`` (``~/.cache/hpvm/<target>``)."""
    explicit = os.environ.get("HPVM_CACHE_DIR")
    if explicit:
        return Path(explicit) / target
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hpvm" / target


CORE_API_VERSION = 1
"""The version of this contract.  A plugin states the version it was built
for (``Target.api_version``); the registry refuses a mismatch."""


@dataclass(frozen=True)
class Availability:
    """Whether a target can be used on this machine, and if not, why."""

    available: bool
    reason: str = ""

    @classmethod
    def yes(cls, detail: str = "") -> "Availability":
        return cls(True, detail)

    @classmethod
    def no(cls, reason: str) -> "Availability":
        return cls(False, reason)


@dataclass(frozen=True)
class NodeRef:
    """A node named by its graph and its own name."""

    graph: str
    node: str

    def __str__(self) -> str:
        return f"@{self.graph}.{self.node}"


@dataclass
class Artifact:
    """What a code generator produced for one target: named files (object
    code, OpenCL C, a bitstream, a model) and JSON-able metadata.  Saved as
    a folder; loaded back in another process.  ``metadata["notes"]``, a
    list of strings, tells the user what the code generator had to do
    (a fallback pipeline after a toolchain crash ...); they go into the
    placement report."""

    target: str
    files: ArtifactFiles = field(default_factory=ArtifactFiles)
    """File name -> bytes; a file may be given as a function that makes its
    bytes when first read (see hpvm.artifact_files)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    live: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What the compiling process already holds of the files, parsed or
    built (a module, machine code), for the target's ``load`` in the same
    process to take instead of reading the files again.  Never saved: an
    artifact loaded from a folder has none, and ``load`` must work
    without it."""

    def __post_init__(self):
        if not isinstance(self.files, ArtifactFiles):
            self.files = ArtifactFiles(self.files)

    @property
    def notes(self) -> list[str]:
        return list(self.metadata.get("notes", ()))

    def save(self, folder: str | Path) -> None:
        """Write every file and ``artifact.json`` (with each file's sha256)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        digests = write_files(folder, self.files)
        manifest = {"target": self.target, "files": sorted(self.files), "sha256": digests,
                    "metadata": self.metadata}
        write_json(folder / "artifact.json", manifest)

    @classmethod
    def load(cls, folder: str | Path) -> "Artifact":
        """Read back what ``save`` wrote; SavedFolderError naming the file
        when a name leaves the folder, a file changed or the manifest is
        damaged."""
        folder = Path(folder)
        path = folder / "artifact.json"
        manifest = read_manifest(path, {"target": str, "files": list, "sha256": dict,
                                        "metadata": dict})
        files = {name: read_checked(folder, name, manifest["sha256"].get(name), path)
                 for name in manifest["files"]}
        return cls(manifest["target"], files, manifest["metadata"])


@dataclass(frozen=True)
class Knob:
    """A tuning parameter the target exposes to design-space exploration.

    ``name`` is one of the target's compile options (``Target.options``);
    ``values`` lists the admissible settings; ``default`` is used without
    tuning; ``node`` is the node it applies to (None: the whole program).
    A program-wide knob sets the option to its value; a knob of a node sets
    the option to a dict from node name to value (hpvm.tune gathers every
    node's), as ``work_group`` of gpu_opencl reads it.  None as a value:
    leave the option unset (the target decides).  ``as_written``: the
    value that compiles the program as written, where the default
    transforms it (the cpu's ``register_tiles``); the tuner's confirmation
    step always measures it beside the winner (None: the default).
    ``copies_only``: the knob changes how buffers move between host and
    device, not the nodes' work (gpu_opencl's ``transfer``); tuning for
    the nodes' own time alone leaves it at its default, since that
    objective cannot see what it does."""

    name: str
    values: tuple
    default: Any
    node: NodeRef | None = None
    as_written: Any = None
    copies_only: bool = False


class Device:
    """Runtime shim: one device's memory and execution.

    Buffers are opaque handles made by :meth:`allocate`.  ``launch`` runs
    one node placed on this device with buffer handles and scalar values for
    its ports and returns an event; ``wait`` blocks until the event is done.
    """

    name: str = "device"
    host_memory: bool = False
    """True when handles are numpy arrays in host memory (CPU-like devices):
    the memory tracker then hands arrays over without copying."""
    async_launch: bool = False
    """True when ``launch`` only queues work on the device and returns at
    once (a CUDA stream): the runtime then launches from the thread that
    made the node ready instead of handing it to a worker thread, which
    would cost more than the launch itself."""
    multicore_launch: bool = False
    """True when one launch already spreads its work over every core (a
    kernel split across threads): running independent nodes of this
    device side by side then gains nothing, and the runtime may run them in
    a static schedule, one after another (runtime/static_run.py)."""
    graph_capture: bool = False
    """True when :meth:`capture` records launches (a CUDA graph), and every
    launch writes the whole of each output (a buffer reused from run to run
    needs no zero fill): a program placed wholly on this device then runs
    as one replay per run (runtime/static_run.py)."""
    parallel_clear: bool = False
    """True when :meth:`clear` zero-fills on every core (and
    :meth:`copy_buffer` copies on every core): the static
    schedule (runtime/static_run.py) then keeps large intermediates in its
    arena and clears them in each run, rather than making them afresh and
    paying the OS for zeroed pages."""
    ordered_launches: bool = False
    """True when launches made from one thread run on the device in the
    order made, and :meth:`elapsed` gives each one's own time once a later
    one is waited for: a program placed wholly on this device then waits
    only where the host must see the device's work, not after every
    launch (runtime/pending_launches.py)."""
    timing_label: str = ""
    """Said beside the target in run reports when the times are not the
    real device's: ``"emulated"`` for a target emulating its hardware."""

    def allocate(self, shape: tuple[int, ...], dtype) -> Any:
        raise NotImplementedError

    def copy_in(self, handle, array) -> None:
        raise NotImplementedError

    def copy_out(self, handle):
        raise NotImplementedError

    def duplicate(self, handle, shape: tuple[int, ...], dtype) -> Any:
        """A new buffer holding a copy of ``handle``; the default goes
        through the host."""
        copy = self.allocate(shape, dtype)
        self.copy_in(copy, self.copy_out(handle))
        return copy

    def clear(self, handle) -> None:
        """Zero-fill a buffer in host memory (devices with ``host_memory``)
        before a launch that may write only part of it."""
        handle.fill(0)

    def copy_buffer(self, to, source) -> None:
        """Copy one buffer of this device into another of its shape and
        dtype: a value a node updates in place while others still read it
        (host memory), an input taken from another library into the buffer
        a captured replay reads (own memory).  The default is for buffers in
        host memory."""
        np.copyto(to, source)

    def empty(self, shape: tuple[int, ...], dtype) -> Any:
        """A buffer whose first contents do not matter: the node making it
        writes it whole.  The default allocates (zero-filled)."""
        return self.allocate(shape, dtype)

    def adopt(self, array) -> "tuple[Any, tuple[int, ...], np.dtype] | None":
        """``array``, an input from another library, as ``(handle, shape,
        dtype)`` of a buffer of this device over the same memory, when it
        lives in this device's memory (a CUDA tensor on aten's CUDA
        device, a ``pyopencl.array.Array`` of gpu_opencl's context); None
        when it lives elsewhere (the runtime then copies it, once, through
        the host).  Raise :class:`ArrayRefused` for an array of this
        device's kind that it cannot take (another device or context, an
        array that is not dense).  The runtime never frees or writes an
        adopted buffer."""
        return None

    def export(self, handle) -> Any:
        """``handle``'s value as this device's own array type, for runs
        asked for ``outputs="device"`` (a torch tensor, a pyopencl array):
        the caller owns it from then on, and the runtime never frees
        ``handle`` again.  None: the device has no array type of its own,
        and the runtime copies the value to the host."""
        return None

    def lend(self, handle) -> Any:
        """``handle``'s memory as this device's own array type, without a
        copy, for a caller who may keep it while the runtime goes on using
        the buffer (an output of a captured replay, which the next replay
        overwrites): the runtime asks :meth:`lent` before it writes the
        buffer again.  None (the default): the device cannot tell when the
        caller lets go, and the runtime hands out a copy instead
        (:meth:`duplicate`, then :meth:`export`)."""
        return None

    def lent(self, handle) -> bool:
        """True while an array :meth:`lend` made of ``handle``, or anything
        viewing its memory, is still alive."""
        return False

    def held(self, handle) -> "tuple[Hashable, Any] | None":
        """For a buffer over an array of the caller's (``adopt``, or an input
        staged on this device): a key that stays equal while the same array
        object comes back over the same memory and layout, and a buffer of
        this device over that memory which keeps it alive whatever becomes
        of ``handle``.  A captured replay then reads the array where it is
        instead of copying it into a buffer of its own.  None (the
        default): the device cannot say."""
        return None

    def free(self, handle) -> None:
        """Release a buffer; the default leaves it to garbage collection."""

    def launch(self, node: NodeRef, args: dict[str, Any]) -> Any:
        raise NotImplementedError

    def bind(self, node: NodeRef, args: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
        """A launcher of ``node`` for runs that repeat with the same shapes:
        ``launcher(changed)`` launches it with ``args``, the entries of
        ``changed`` (buffers of the same shapes and dtypes, scalars of the
        same type) in place of theirs, and returns the event.  The default
        calls ``launch``; a device overrides it to prepare the launch once
        (resolve the kernel, pack the arguments) and redo only what
        ``changed`` changes.

        A launcher holds the values of ``changed`` only for their launch
        (the caller holds them until the event is waited for), so that a
        run's outputs and inputs are freed once their owner drops them; a
        port once changed is given again in every later launch, as the
        static schedule does."""
        bound, ports = dict(args), tuple(args)

        def launcher(changed: dict[str, Any]) -> Any:
            given = {**bound, **changed}
            for name in changed:
                bound.pop(name, None)
            missing = [p for p in ports if p not in given]
            if missing:
                raise port_let_go(Location(graph=node.graph, node=node.node, port=missing[0]))
            return self.launch(node, given)
        return launcher

    def capture(self, run: Callable[[], None]) -> Callable[[], None]:
        """For a device with ``graph_capture``: a replayer of the launches
        ``run()`` makes (same buffers, same arguments; ``run`` may be called
        first to warm up).  ``copy_in`` must then write into a buffer's own
        memory, where the replay reads it.  The default returns ``run``."""
        return run

    def wait(self, event) -> None:
        """Block until ``event`` is complete; the default: launches are
        synchronous."""

    def elapsed(self, event) -> float | None:
        """Seconds the device says the completed launch ``event`` took, when
        that is not the host's wall time (an emulator's cycle model; say so
        in ``timing_label``); None: the run report times the launch."""
        return None


class ArrayRefused(Exception):
    """Raised by :meth:`Device.adopt` for an array of the device's kind
    that it cannot take; the runtime reports it against the input."""

    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def port_let_go(location: Location) -> ExecutionError:
    """The error of a bound launch (``Device.bind``) not given again the
    value of a port it changed before, which it let go after that launch."""
    return ExecutionError(Diagnostic(
        location, "a bound launch was not given this port's value again, and the one of its "
        "last launch was let go", "pass every port a launch changed in each later launch"))


class HostMemoryDevice(Device):
    """A Device whose buffers are numpy arrays in host memory (CPU-like
    devices, emulators, runtimes that read and write host arrays): the
    memory tracker hands arrays over without copying.  Subclasses supply
    ``launch`` (and ``wait``)."""

    host_memory = True

    def allocate(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        return aligned_zeros(tuple(shape), dtype)

    def copy_in(self, handle: np.ndarray, array) -> None:
        handle[...] = array

    def copy_out(self, handle: np.ndarray) -> np.ndarray:
        return handle.copy()

    def duplicate(self, handle: np.ndarray, shape: tuple[int, ...], dtype) -> np.ndarray:
        return handle.copy()


class Target:
    """Base class of every target.  Override what your device needs."""

    name: str = "unnamed"
    description: str = ""
    api_version: int = CORE_API_VERSION
    native_tensor_ops: frozenset[str] = frozenset()
    """Tensor ops this target runs as such; others are lowered to kernel IR
    before :meth:`compile` if the target claims kernel nodes."""
    native_precisions: frozenset[str] = frozenset({"fp32"})
    """Node precisions (the ``precision`` attribute: fp32, fp16, int8,
    tf32) its native tensor ops honour.  Placement does not give the target a node of
    a native op in another precision; lowered ops honour every one."""

    def availability(self) -> Availability:
        """Is the device / toolchain present?  Cheap; called by
        ``hpvm targets`` and before placement."""
        return Availability.yes()

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        """Matcher: may this target run leaf ``node`` of ``graph``?"""
        return False

    def configured(self, options: dict) -> "Target":
        """This target as the compile ``options`` it declares configure it,
        for its matcher (placement asks the result's :meth:`claims`): a
        device chosen by option may run other nodes.  Default: itself."""
        return self

    def declines(self, module: Module, graph: Graph, node: Node) -> str:
        """Why :meth:`claims` refused ``node``, in words, for the placement
        report of a node that fell back; empty to say nothing."""
        return ""

    def partitions(self, module: Module, nodes: list[NodeRef], options: dict) -> list[list[NodeRef]]:
        """Groups of ``nodes`` (leaf nodes placed on this target) to run as
        one launch each: an accelerator's compiled network, a fused layer.
        Each group must lie in one graph and be convex (no path leaves it
        and comes back).  The runtime outlines every group into an internal
        node (hpvm.passes.outline); :meth:`compile` and :meth:`load` then
        see that node (its child graph holds the members) in place of the
        members.  A group of one node stays as it is.  Default: none, one
        launch per node."""
        return []

    default_pipeline: str = ""
    """Graph and kernel passes (pass-manager syntax) that suit this target,
    run on the whole program before placement when the user asks for
    ``options={"pipeline": "default"}`` and this is the first listed
    target; empty for none."""

    def pipeline_for(self, options: dict) -> str:
        """The default pipeline as a compile with this target's
        ``options`` runs it: the target may size its passes from them (the
        cpu cuts loops into strips for its cores).  Default:
        :attr:`default_pipeline`."""
        return self.default_pipeline

    def options(self) -> list[Option]:
        """The compile options this target reads (hpvm.options.Option: name,
        type, default, allowed values, one line of help).  ``hpvm.compile``
        refuses keys no listed target declares and values a declaration
        refuses, and hands each target only the options it declares, as
        given by the user (a missing one: the target's default)."""
        return []

    def passes(self, options: dict) -> str:
        """An extra pass pipeline (pass-manager syntax) run on the module
        before :meth:`compile`; empty for none."""
        return ""

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        """Code generator: an Artifact able to run ``nodes`` of ``module``."""
        raise NotImplementedError(f"target '{self.name}' has no code generator")

    def load(self, artifact: Artifact, options: dict) -> Device:
        """Runtime shim: a Device ready to launch the artifact's nodes."""
        raise NotImplementedError(f"target '{self.name}' has no runtime")

    def knobs(self, module: Module, nodes: list[NodeRef]) -> list[Knob]:
        """Tuning knobs this target offers for ``nodes``; none by default."""
        return []

    def estimate(self, module: Module, nodes: list[NodeRef], options: dict,
                 sizes: dict | None = None) -> dict | None:
        """Cost model: estimated metrics (``{"seconds": ..}`` and whatever
        else the target knows) without running; None when it has none.
        ``sizes`` (hpvm.runtime.sizes.node_sizes), when the inputs are
        known: per node, its shape symbols' and integer scalars' values.
        ``"feasible": False`` with a ``"reason"`` marks a design the device
        cannot hold."""
        return None
