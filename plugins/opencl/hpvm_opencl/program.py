"""Building OpenCL programs: cached in memory and on disk, and build errors
reported against the generated line and the IR it came from.

The disk cache holds program binaries under ``$HPVM_CACHE_DIR/gpu_opencl``
(else ``$XDG_CACHE_HOME/hpvm/gpu_opencl``, else ``~/.cache/hpvm/...``),
keyed by sha256 of the source, the build options and the device's
compiler identity.  It is best effort: a bad or unwritable entry only
costs a rebuild.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import warnings
from pathlib import Path

from hpvm.target import cache_directory as target_cache_directory
from hpvm.errors import TargetError

from .devices import DeviceRuntime
from .renderer import INDEX_MACRO

CODEGEN_VERSION = 1
"""Bump when the meaning of generated code changes."""
SOURCE_FILE = "kernels.cl"
MAX_REPORTED_ERRORS = 3

_PROGRAMS: dict[tuple, object] = {}
_PROGRAMS_LOCK = threading.Lock()
_LOCATION = re.compile(r":(\d+):(\d+):")


NARROW_ELEMENTS = 2 ** 31 - 1
"""Buffers of at most this many elements are indexed in ``int`` (the
renderer's INDEX_MACRO); a launch passing a larger one runs the program
built with ``long`` indices."""


def build_options(options: dict, wide: bool = False) -> list[str]:
    """Compiler flags: exact division and sqrt (the interpreter's results)
    unless ``fast_math`` is set, the type of buffer indices (``long`` if
    ``wide``, else ``int``), and the user's ``build_options``."""
    flags = ["-cl-fast-relaxed-math"] if options.get("fast_math") else [
        "-cl-fp32-correctly-rounded-divide-sqrt"]
    flags.append(f"-D{INDEX_MACRO}={'long' if wide else 'int'}")
    extra = options.get("build_options") or []
    return flags + (extra.split() if isinstance(extra, str) else list(extra))


def cache_directory() -> Path:
    return target_cache_directory("gpu_opencl")


def cache_key(source: str, flags: list[str], runtime: DeviceRuntime) -> str:
    text = "\n".join([f"hpvm-gpu-opencl {CODEGEN_VERSION}", runtime.info.key, " ".join(flags),
                      source])
    return hashlib.sha256(text.encode()).hexdigest()


def build_program(runtime: DeviceRuntime, source: str, flags: list[str],
                  explain_line=None):
    """The built program of ``source`` on ``runtime``'s device.

    ``explain_line(n)`` names the IR behind generated line ``n`` (for
    build errors)."""
    key = cache_key(source, flags, runtime)
    with _PROGRAMS_LOCK:
        program = _PROGRAMS.get((runtime.device.int_ptr, key))
    if program is None:
        program = _from_disk(runtime, key, flags) or _from_source(runtime, source, flags, key,
                                                                  explain_line)
        with _PROGRAMS_LOCK:
            _PROGRAMS[(runtime.device.int_ptr, key)] = program
    return program


def _from_disk(runtime: DeviceRuntime, key: str, flags: list[str]):
    import pyopencl as cl
    try:
        binary = (cache_directory() / f"{key}.bin").read_bytes()
        return _quiet_build(cl.Program(runtime.context, [runtime.device], [binary]), flags)
    except (OSError, cl.Error):
        return None


def _from_source(runtime: DeviceRuntime, source: str, flags: list[str], key: str, explain_line):
    import pyopencl as cl
    try:
        program = _quiet_build(cl.Program(runtime.context, source), flags, cache_dir=False)
    except cl.Error as error:
        raise TargetError(build_error_message(str(error), source, runtime, explain_line)) from None
    _store(program, key)
    return program


def _quiet_build(program, flags: list[str], **options):
    import pyopencl as cl
    with warnings.catch_warnings():  # compiler chatter is not the user's business
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return program.build(flags, **options)


def _store(program, key: str) -> None:
    import pyopencl as cl
    try:
        binary = program.get_info(cl.program_info.BINARIES)[0]
        directory = cache_directory()
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f"{key}.{os.getpid()}.tmp"
        temporary.write_bytes(binary)
        os.replace(temporary, directory / f"{key}.bin")
    except (OSError, cl.Error, IndexError):
        pass


def build_error_message(log: str, source: str, runtime: DeviceRuntime, explain_line=None) -> str:
    """The compiler's complaints, each with the generated line it points at
    and the IR it came from."""
    lines = source.splitlines()
    complaints = [line.strip() for line in log.splitlines() if "error" in line.lower()
                  and _LOCATION.search(line)]
    parts = [f"gpu_opencl: the OpenCL C compiler of {runtime.info.describe()} rejected the "
             f"generated code ({SOURCE_FILE})"]
    for complaint in complaints[:MAX_REPORTED_ERRORS]:
        number = int(_LOCATION.search(complaint).group(1))
        parts.append(f"  {complaint}")
        if 1 <= number <= len(lines):
            parts.append(f"    {SOURCE_FILE}:{number}: {lines[number - 1].strip()}")
        if explain_line is not None:
            parts.append(f"    from {explain_line(number)}")
    if not complaints:
        parts.append(log.strip())
    parts.append("fix: this is a code generator bug unless the kernel uses something the "
                 "device lacks; place the node on another target (hint cpu) and report it")
    return "\n".join(parts)
