"""Running cross-compiled kernels under qemu-user.

``emit_object`` (codegen/objects.py) makes object code for another ISA.
This module links it with a small, generic C runner into a static program
for that ISA and runs it through qemu-user, so the same portable module can
be checked on aarch64 and riscv64 from an x86-64 machine (and on the real
machine, without qemu).

The runner speaks a byte protocol on stdin/stdout: the slot array of the
entry (codegen/abi.py), then each buffer as (slot index, byte count,
bytes); it points the slots at its own copies, runs every instance, and
writes the buffers back in the same order.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from hpvm.errors import TargetError
from hpvm.ir.graph import Module

from .codegen import emit_object
from .codegen.abi import ArgumentLayout, entry_symbol
from .codegen.marshal import pack_arguments

QEMU = {"aarch64": "qemu-aarch64", "riscv64": "qemu-riscv64", "x86_64": None}

RUNNER_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern void ENTRY(int64_t *slots, int64_t begin, int64_t end);

static void read_exactly(void *to, size_t size) {
  if (size && fread(to, 1, size, stdin) != size) { fputs("runner: short input\n", stderr); exit(2); }
}

int main(void) {
  int64_t slot_count, buffer_count;
  read_exactly(&slot_count, 8);
  int64_t *slots = malloc(8 * slot_count);
  read_exactly(slots, 8 * slot_count);
  read_exactly(&buffer_count, 8);
  int64_t *sizes = malloc(8 * buffer_count);
  char **data = malloc(sizeof(char *) * buffer_count);
  for (int64_t b = 0; b < buffer_count; b++) {
    int64_t slot;
    read_exactly(&slot, 8);
    read_exactly(&sizes[b], 8);
    data[b] = calloc(sizes[b] ? sizes[b] : 1, 1);
    read_exactly(data[b], sizes[b]);
    slots[slot] = (int64_t)(intptr_t)data[b];
  }
  ENTRY(slots, 0, slots[0]);
  for (int64_t b = 0; b < buffer_count; b++) fwrite(data[b], 1, sizes[b], stdout);
  return 0;
}
"""


def toolchain(triple: str) -> tuple[str, str | None]:
    """The cross C compiler and the qemu-user program for ``triple``;
    TargetError naming the Debian packages when one is missing."""
    arch = triple.split("-")[0]
    gcc = f"{triple}-gcc" if arch != _host_arch() else "gcc"
    qemu = QEMU.get(arch) if arch != _host_arch() else None
    missing = [tool for tool in (gcc, qemu) if tool and shutil.which(tool) is None]
    if missing:
        raise TargetError(f"cannot run {triple} code here: {', '.join(missing)} not found "
                          f"(Debian: apt-get install gcc-{triple} qemu-user)")
    return gcc, qemu


def _host_arch() -> str:
    import platform
    return platform.machine()


def build_runner(module: Module, function: str, rank: int, triple: str,
                 folder: str | Path) -> Path:
    """A static program for ``triple`` running node kernel ``function``."""
    gcc, _ = toolchain(triple)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.o").write_bytes(emit_object(module, {function: rank}, triple=triple))
    (folder / "runner.c").write_text(RUNNER_SOURCE.replace("ENTRY", entry_symbol(function)))
    program = folder / "runner"
    result = subprocess.run([gcc, "-static", "-O1", "-o", str(program), str(folder / "runner.c"),
                             str(folder / "kernels.o"), "-lm"], capture_output=True, text=True)
    if result.returncode != 0:
        raise TargetError(f"linking the {triple} runner failed:\n{result.stderr.strip()}")
    return program


def run_runner(program: Path, triple: str, module: Module, function: str, rank: int,
               args: dict[str, Any], replication: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Run ``program`` (from build_runner) on ``args``; returns every
    buffer after the run, as CompiledKernel.run does."""
    _, qemu = toolchain(triple)
    kernel = module.functions[function]
    layout = ArgumentLayout.of(kernel, rank)
    if any(b.scratch is not None for b in layout.buffers):
        raise TargetError(f"the cross runner does not support private buffers ('@{function}')")
    arrays = {b.name: np.ascontiguousarray(args[b.name]) for b in layout.buffers}
    packed = pack_arguments(function, layout, {**args, **arrays}, replication)
    message = [struct.pack("<q", layout.slot_count), packed.slots.astype("<u8").tobytes(),
               struct.pack("<q", len(layout.buffers))]
    for b in layout.buffers:
        message += [struct.pack("<qq", b.pointer, arrays[b.name].nbytes), arrays[b.name].tobytes()]
    command = [qemu, str(program)] if qemu else [str(program)]
    result = subprocess.run(command, input=b"".join(message), capture_output=True, timeout=300)
    if result.returncode != 0:
        raise TargetError(f"{triple} runner failed ({result.returncode}): "
                          f"{result.stderr.decode(errors='replace').strip()}")
    outputs, offset = {}, 0
    for b in layout.buffers:
        array = arrays[b.name]
        outputs[b.name] = np.frombuffer(result.stdout, array.dtype, array.size, offset).reshape(array.shape)
        offset += array.nbytes
    return outputs
