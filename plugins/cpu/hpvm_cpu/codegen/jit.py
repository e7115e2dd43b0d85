"""Running compiled nodes in this process: MCJIT engines and the
multi-threaded launcher.

``CompiledKernel.run`` splits replication dimension 0 into one chunk per
thread and calls the entry once per chunk through ctypes, which releases the
GIL during the call: chunks run truly in parallel and no Python runs per
instance.
"""
from __future__ import annotations

import ctypes
import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.kernel import Const, Expr, For, KernelFunction, While
from hpvm.ir.shapes import replication_sizes
from hpvm.ir.visit import walk

from .abi import ArgumentLayout, BufferSlots, entry_symbol
from .pipeline import MachineCode
from .machine import MachineSpec, parse
from .marshal import PackedArguments, Packer, scalar_bits, set_replication

ENTRY_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
MIN_INSTANCES_PER_CHUNK = 4096
"""Below this many instances per chunk, handing a chunk to another thread
costs more than running it (instances without sized loops)."""
SMALL_TRIP_COUNT = 64
"""Loops of at most this many iterations (constant bounds) count as
straight-line work for MIN_INSTANCES_PER_CHUNK."""


def instances_per_chunk(kernel: KernelFunction) -> int:
    """The fewest instances worth a thread: one when the kernel runs a loop
    whose length is not a small constant (each instance does real work: a
    row of a reduction, a chunk of partial results), else
    MIN_INSTANCES_PER_CHUNK."""
    for node in walk(kernel.body):
        if isinstance(node, While):
            return 1
        if isinstance(node, For):
            bounds = (node.start, node.stop)
            if not all(isinstance(b, Const) for b in bounds) or \
                    abs(node.stop.value - node.start.value) > SMALL_TRIP_COUNT * abs(node.step):
                return 1
    return MIN_INSTANCES_PER_CHUNK


@functools.cache
def _thread_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="hpvm-cpu")


def split_range(count: int, parts: int) -> list[tuple[int, int]]:
    """``[0, count)`` as at most ``parts`` contiguous, near-equal chunks."""
    parts = max(1, min(parts, count))
    base, extra = divmod(count, parts)
    chunks, begin = [], 0
    for index in range(parts):
        end = begin + base + (index < extra)
        chunks.append((begin, end))
        begin = end
    return chunks


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
                 threads: int | None = None, from_cache: bool = False):
        self.kernel = kernel
        self.layout = layout
        self.llvm_ir = code.llvm_ir
        self.notes = code.notes
        self.symbol = entry_symbol(kernel.name)
        self.threads = threads or os.cpu_count() or 1
        self.from_cache = from_cache
        self._engine = llvm.create_mcjit_compiler(parse(""), MachineSpec.host().create(jit=True))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code.object_code))
        self._engine.finalize_object()
        self.entry = ENTRY_TYPE(self._engine.get_function_address(self.symbol))
        self._packer = Packer(kernel.name, layout)
        self._outputs = tuple(p.name for p in kernel.params if p.direction == "out" and p.is_buffer)
        self._private = any(b.scratch is not None for b in layout.buffers)
        self._per_chunk = instances_per_chunk(kernel)

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

    def _run_packed(self, packed: PackedArguments, sizes: tuple[int, ...], threads: int | None) -> None:
        self._launch(self._calls(packed, sizes, threads))

    def _calls(self, packed: PackedArguments, sizes: tuple[int, ...], threads: int | None
               ) -> list[tuple[PackedArguments, int, int]]:
        """The entry calls of one launch: (arguments, first, end) per chunk
        of replication dimension 0 (none when an extent is 0)."""
        if 0 in sizes:
            return []
        parts = min(threads or self.threads, -(-math.prod(sizes) // self._per_chunk))
        private = self._private
        return [(packed.with_scratch() if private else packed, b, e)
                for b, e in split_range(sizes[0], parts)]

    def _launch(self, calls: list[tuple[PackedArguments, int, int]]) -> None:
        if not calls:
            return
        if len(calls) == 1:
            arguments, begin, end = calls[0]
            self.entry(arguments.address, begin, end)
            return
        futures = [_thread_pool().submit(self.entry, a.address, b, e) for a, b, e in calls[1:]]
        arguments, begin, end = calls[0]
        self.entry(arguments.address, begin, end)  # this thread takes a chunk too
        for future in futures:
            future.result()

    def _replication(self, sizes) -> tuple[int, ...]:
        sizes = tuple(int(s) for s in sizes) or (1,)
        if len(sizes) != self.rank or any(s < 0 for s in sizes):
            raise ExecutionError(Diagnostic(
                Location(function=self.kernel.name),
                f"replication {sizes} does not fit a kernel compiled for {self.rank} dimension(s)",
                f"pass {self.rank} non-negative sizes, or compile for rank {len(sizes)}"))
        return sizes


class BoundKernel:
    """A kernel launch with its arguments packed once, for runs that repeat
    with the same shapes: ``bound(changed)`` writes only the pointers (and
    scalar values) of the ports in ``changed`` into the slot arrays, then
    runs every chunk."""

    def __init__(self, kernel: CompiledKernel, packed: PackedArguments,
                 calls: list[tuple[PackedArguments, int, int]]):
        self._kernel = kernel
        self._packed = packed
        self._calls = calls
        self._slots = {p.name: p for p in kernel.layout.params}
        self._arrays = {name: (a.shape, a.dtype) for name, a in packed.buffers.items()}

    def __call__(self, changed: dict[str, Any]) -> None:
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
        self._packed.buffers[name] = value  # kept alive while the slots point to it
        for arguments, _, _ in self._calls:
            arguments.slots[slot] = bits


def missing_outputs(kernel: KernelFunction, args: dict[str, Any]) -> dict[str, np.ndarray]:
    """Zero-filled arrays for the ``out`` buffers missing from ``args``
    whose shapes follow from the given buffers and integer scalars."""
    symbols: dict[str, int] = {}
    for parameter in kernel.params:
        value = args.get(parameter.name)
        if value is None:
            continue
        if parameter.is_buffer and parameter.type.shape is not None and isinstance(value, np.ndarray):
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
