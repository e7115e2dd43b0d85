"""Running compiled nodes in this process: MCJIT engines and the
multi-threaded launcher.

``CompiledKernel.run`` splits replication dimension 0 into chunks
(CHUNKS_PER_CORE per core, or as many as the ``threads`` option says) and
the native pool (thread_pool.py) calls the entry once per chunk on every
core: chunks run truly in parallel and no Python runs per instance.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.target import port_let_go
from hpvm.threads import available_cores
from hpvm.ir.kernel import Expr, For, If, KernelFunction, Stmt, While
from hpvm.passes.loop_unroll import constant_trip_count
from hpvm.ir.shapes import replication_sizes

from .abi import ArgumentLayout, BufferSlots, entry_symbol
from .pipeline import MachineCode
from .machine import MachineSpec, parse
from .marshal import PackedArguments, Packer, scalar_bits, set_replication
from .thread_pool import split_range, thread_pool

ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
CHUNKS_PER_CORE = 4
"""Chunks of a launch per core when the ``threads`` option is not given.
Each core takes its own range of chunks first, then the others' as it
comes free (thread_pool.py), so a core slowed by the OS or a neighbour
takes fewer.  On the lent 16-core Xeon (whole calls, 1 against 4 chunks
per core, two rounds): camera as written 13.9-15.0 -> 10.4 ms, cfd
15.6-17.2 -> 11.5-13.1, bfs 8.9-10.1 -> 7.7-8.5, edge (default pipeline)
1.05-1.06 -> 0.80-0.85, blur 0.44-0.48 -> 0.30-0.41."""
MIN_WORK_PER_CHUNK = 8192


def launch_chunks(threads: int | None) -> int:
    """Chunks a launch is cut into for the ``threads`` option: CHUNKS_PER_CORE
    per core when it lets every core take part (None, or as many threads as
    cores or more), so that a core slowed by a neighbour takes fewer; else
    one per thread, which keeps the launch to that many cores.  One chunk per
    core of the lent 16-core Xeon (``threads=16``) against four, batch 8, in
    one process: ResNet-18 68.7 against 42.8 ms, ResNet-50 96.5 / 84.2,
    MobileNetV2 12.6 / 10.5, BERT 83.8 / 61.5."""
    cores = available_cores()
    if threads is None or threads >= cores:
        return max(threads or cores, cores) * CHUNKS_PER_CORE
    return threads
"""Below this many statements run per chunk (:func:`work_per_instance`),
handing a chunk to another core costs more than running it."""
UNKNOWN_TRIPS = 256
"""Iterations assumed of a loop whose bounds are not constants."""


def work_per_instance(body: tuple[Stmt, ...]) -> int:
    """Statements one instance runs, counting each loop's body once per
    iteration (constant bounds, else UNKNOWN_TRIPS) and both branches of
    an if: a rough measure of an instance's work, to size chunks."""
    total = 0
    for stmt in body:
        if isinstance(stmt, For):
            trips = constant_trip_count(stmt)
            total += work_per_instance(stmt.body) * (UNKNOWN_TRIPS if trips is None else trips)
        elif isinstance(stmt, While):
            total += work_per_instance(stmt.body) * UNKNOWN_TRIPS
        elif isinstance(stmt, If):
            total += 1 + work_per_instance(stmt.then_body) + work_per_instance(stmt.else_body)
        else:
            total += 1
    return total


def instances_per_chunk(kernel: KernelFunction) -> int:
    """The fewest instances worth a chunk of their own."""
    return max(1, -(-MIN_WORK_PER_CHUNK // max(1, work_per_instance(kernel.body))))


class CompiledKernel:
    """A node kernel compiled to machine code for this CPU.

    ``run(args, replication_sizes)`` runs every instance; ``llvm_ir`` is the
    optimised LLVM IR; ``notes`` what the compile worker had to do
    (pipeline.py); ``layout`` the slot layout (abi.py); ``symbol`` the
    entry's name; ``from_cache`` says whether the code came from the cache.
    Only the object code is linked here: LLVM's passes and code generator
    never run in this process.
    """

    def __init__(self, kernel: KernelFunction, layout: ArgumentLayout, code: MachineCode,
                 threads: int | None = None, from_cache: bool = False, lanes: int = 1):
        self.kernel = kernel
        self.layout = layout
        self.code = code
        self.llvm_ir = code.llvm_ir
        self.notes = code.notes
        self.symbol = entry_symbol(kernel.name)
        self._chunks = launch_chunks(threads)
        self.from_cache = from_cache
        self._engine = llvm.create_mcjit_compiler(parse(""), MachineSpec.host().create(jit=True))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_code))
        self._engine.finalize_object()
        self._address = self._engine.get_function_address(self.symbol)
        self.entry = ENTRY_TYPE(self._address)
        self._packer = Packer(kernel.name, layout)
        self._outputs = tuple(p.name for p in kernel.params if p.direction == "out" and p.is_buffer)
        self._private = any(b.scratch is not None for b in layout.buffers)
        self._per_chunk = instances_per_chunk(kernel)
        self._lanes = max(1, lanes) if layout.rank == 1 else 1
        """The instances of a lane strip (lanes.py) of a one-dimensional
        node: what its chunks hold a multiple of (:meth:`_unit`)."""

    @property
    def rank(self) -> int:
        return self.layout.rank

    def run(self, args: dict[str, Any], replication_sizes=(), threads: int | None = None
            ) -> dict[str, np.ndarray]:
        """Run all instances on ``args`` (numpy arrays for buffers, updated
        in place; numbers for scalars).  ``out`` buffers that are not given
        are made zero-filled when their shape follows from the other
        arguments.  Returns every buffer by parameter name."""
        sizes = self._replication(replication_sizes)
        if not all(name in args for name in self._outputs):
            args = {**args, **missing_outputs(self.kernel, args)}
        packed = self._packer.pack(args, sizes)
        self._run_packed(packed, sizes, threads)
        return dict(packed.buffers)

    def run_replicated(self, args: dict[str, Any], replication: tuple[Expr, ...]) -> None:
        """Run a node: every argument given, buffers updated in place; the
        replication expressions are evaluated in the scope the arguments
        bind (their shape symbols and integer scalars)."""
        packed = self._packer.pack(args)
        sizes = self._replication(replication_sizes(replication, packed.symbols,
                                                    Location(function=self.kernel.name)))
        set_replication(packed, sizes)
        self._run_packed(packed, sizes, None)

    def bind(self, args: dict[str, Any], replication: tuple[Expr, ...]) -> "BoundKernel":
        """A node's launch prepared once (see :class:`BoundKernel`)."""
        packed = self._packer.pack(args)
        sizes = self._replication(replication_sizes(replication, packed.symbols,
                                                    Location(function=self.kernel.name)))
        set_replication(packed, sizes)
        return BoundKernel(self, packed, self._calls(packed, sizes, None))

    def _run_packed(self, packed: PackedArguments, sizes: tuple[int, ...],
                    threads: int | None) -> None:
        self._launch(self._calls(packed, sizes, threads))

    def _calls(self, packed: PackedArguments, sizes: tuple[int, ...], threads: int | None
               ) -> "Chunks":
        """The entry calls of one launch, one per chunk of replication
        dimension 0 (none when an extent is 0)."""
        if 0 in sizes:
            return Chunks([], [])
        wanted = launch_chunks(threads) if threads else self._chunks
        unit = self._unit(sizes[0], min(wanted, available_cores()))
        parts = min(wanted, -(-math.prod(sizes) // max(self._per_chunk, unit)))
        private = self._private
        ranges = split_range(sizes[0], parts, unit)
        return Chunks([packed.with_scratch() if private else packed for _ in ranges], ranges)

    def _unit(self, count: int, cores: int) -> int:
        """Instances a chunk of ``count`` holds a multiple of: whole lane
        strips, which LLVM's vectoriser fills (a strip cut by a chunk runs
        its instances one at a time: trmm at 1000^2 on 2 cores, chunks of
        125 instances, 46 ms; at 1024^2, chunks of 8 strips, 21 ms), where
        a strip is worth a chunk or there are strips for every core; else 1
        (a register-tiled convolution's 16 instances of a 7x7 image ran as
        one strip on one core)."""
        strips = -(-count // self._lanes)
        return self._lanes if self._per_chunk >= self._lanes or strips >= cores else 1

    def _launch(self, chunks: "Chunks") -> None:
        if chunks.single is not None:
            self.entry(*chunks.single)
        elif len(chunks.table):
            thread_pool().run(self._address, chunks.table)

    def _replication(self, sizes) -> tuple[int, ...]:
        sizes = tuple(int(s) for s in sizes) or (1,)
        if len(sizes) != self.rank or any(s < 0 for s in sizes):
            raise ExecutionError(Diagnostic(
                Location(function=self.kernel.name),
                f"replication {sizes} does not fit a kernel compiled for {self.rank} dimension(s)",
                f"pass {self.rank} non-negative sizes, or compile for rank {len(sizes)}"))
        return sizes


class Chunks:
    """The calls of one launch: per chunk its argument slots (kept alive
    here) and a row (slot address, first, end) of ``table``, the form the
    native pool reads."""

    def __init__(self, arguments: list[PackedArguments], ranges: list[tuple[int, int]]):
        self.arguments = arguments
        self.table = np.array([(a.address, b, e) for a, (b, e) in zip(arguments, ranges)],
                              dtype=np.uint64).reshape(len(ranges), 3)
        self.single = tuple(int(word) for word in self.table[0]) if len(ranges) == 1 else None
        """The one call's arguments, when there is one chunk (run here)."""


class BoundKernel:
    """A kernel launch with its arguments packed once, for runs that repeat
    with the same shapes: ``bound(changed)`` writes only the pointers (and
    scalar values) of the ports in ``changed`` into the slot arrays, then
    runs every chunk.

    The arrays of ``changed`` are not held here (the caller holds them while
    the launch runs): a run's output, dropped by its caller, goes back to
    its pool before the next run, whose output then reuses the same memory,
    still in the cache.  A port once changed must be given again in every
    later launch: its slot may point at memory that is gone."""

    def __init__(self, kernel: CompiledKernel, packed: PackedArguments,
                 calls: Chunks):
        self._kernel = kernel
        self._packed = packed
        self._calls = calls
        self._slots = {p.name: p for p in kernel.layout.params}
        self._arrays = {name: (a.shape, a.dtype) for name, a in packed.buffers.items()}
        self._released: set[str] = set()
        """Ports changed by a launch, whose arrays were let go after it:
        their slots may point at memory that is gone."""

    def __call__(self, changed: dict[str, Any]) -> None:
        ports = changed.keys()
        if ports != self._released:  # a port changed for the first time (or one left out)
            if not ports >= self._released:
                missing = min(self._released.difference(changed))
                raise port_let_go(Location(function=self._kernel.kernel.name, port=missing))
            for name in changed:
                self._packed.buffers.pop(name, None)  # the array bound first
            self._released.update(changed)
        for name, value in changed.items():
            self._change(name, value)
        self._kernel._launch(self._calls)

    def _change(self, name: str, value) -> None:
        param = self._slots[name]
        if isinstance(param, BufferSlots):
            if (value.shape, value.dtype) != self._arrays[name] or not value.flags.c_contiguous:
                raise ExecutionError(Diagnostic(
                    Location(function=self._kernel.kernel.name, port=name),
                    f"a bound launch got an array of shape {value.shape} ({value.dtype}) "
                    f"instead of {self._arrays[name]}", "bind the launch again for new shapes"))
            slot, bits = param.pointer, value.ctypes.data
        else:
            slot, bits = param.slot, scalar_bits(self._kernel.kernel.name, param, value)
        for arguments in self._calls.arguments:
            arguments.slots[slot] = bits


def missing_outputs(kernel: KernelFunction, args: dict[str, Any]) -> dict[str, np.ndarray]:
    """Zero-filled arrays for the ``out`` buffers missing from ``args``
    whose shapes follow from the given buffers and integer scalars."""
    symbols: dict[str, int] = {}
    for parameter in kernel.params:
        value = args.get(parameter.name)
        if value is None:
            continue
        if parameter.is_buffer and parameter.type.shape is not None and \
                isinstance(value, np.ndarray):
            for dim, size in zip(parameter.type.shape, value.shape):
                if isinstance(dim, str):
                    symbols.setdefault(dim, size)
        elif not parameter.is_buffer and parameter.type.is_int:
            symbols[parameter.name] = int(value)
    made = {}
    for parameter in kernel.params:
        if parameter.name in args or parameter.direction != "out" or not parameter.is_buffer:
            continue
        shape = parameter.type.shape
        if shape is not None and all(isinstance(d, int) or d in symbols for d in shape):
            made[parameter.name] = np.zeros(parameter.type.concrete_shape(symbols),
                                            parameter.type.element.numpy_dtype)
    return made
