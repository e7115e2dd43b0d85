"""The compile cache: machine code by a key naming everything the code
depends on, in memory (compiled kernels) and on disk.

The disk cache lives in ``$HPVM_CACHE_DIR/cpu``, else
``$XDG_CACHE_HOME/hpvm/cpu``, else ``~/.cache/hpvm/cpu``, in a folder per
version of the code generator (``code-<stamp>``, :func:`code_stamp`); per
compiled node ``<key>.o`` (object code), ``<key>.json`` (the pipeline used
and its notes) and ``<key>.ll`` (the optimised IR, written last: an entry
without it is not read).  The first use in a process removes the folders
of all but the KEPT_VERSIONS versions used last.  It is best effort: an
unwritable directory only costs the second compile.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import shutil
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from hpvm.target import cache_directory as target_cache_directory
from hpvm.ir.graph import Module
from hpvm.ir.kernel import Call
from hpvm.ir.visit import walk

from .pipeline import MachineCode

CODE_PACKAGES = ("hpvm_cpu", "hpvm.ir", "hpvm.passes", "hpvm.codegen")
"""The packages whose code turns a kernel's IR into machine code: the code
generator and the IR helpers, passes and shared code generation rules
(hpvm.codegen.aliasing: which buffers are ``noalias``) it calls.  Their
sources are part of every key (:func:`code_stamp`), so an entry made by
other code (an upgrade, a checkout of another commit) is never read."""
KEPT_VERSIONS = 3
"""Versions of the code generator whose entries stay on disk: this one and
the two used before it (another checkout or install sharing the cache)."""


def reachable_functions(module: Module, function_name: str) -> list[str]:
    """``function_name`` and every helper it calls, directly or not, sorted."""
    seen: set[str] = set()
    pending = [function_name]
    while pending:
        name = pending.pop()
        if name in seen or name not in module.functions:
            continue
        seen.add(name)
        pending.extend(n.function for n in walk(module.functions[name].body) if isinstance(n, Call))
    return sorted(seen)


def cache_key(module: Module, function_name: str, rank: int, options: dict,
              machine: tuple) -> str:
    """sha256 over the code generator's sources, the kernel and its helpers
    (repr of the frozen IR), the rank, the options, LLVM's and llvmlite's
    versions and the machine."""
    text = "\n".join([
        f"hpvm-cpu codegen {code_stamp()}",
        *(repr(module.functions[name]) for name in reachable_functions(module, function_name)),
        f"entry {function_name} rank {rank}",
        json.dumps(options, sort_keys=True, default=repr),
        f"llvm {llvm.llvm_version_info} llvmlite {llvmlite.__version__}",
        repr(machine),
    ])
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def code_stamp() -> str:
    """sha256 over the sources of :data:`CODE_PACKAGES` (read once per
    process)."""
    return sources_digest([Path(importlib.import_module(name).__file__).parent
                           for name in CODE_PACKAGES])


def sources_digest(roots: list[Path]) -> str:
    """sha256 over every ``.py`` file under ``roots``: its path below its
    root and its bytes."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_root() -> Path:
    return target_cache_directory("cpu")


def cache_directory() -> Path:
    """The folder of this code generator's entries."""
    return cache_root() / f"code-{code_stamp()[:16]}"


@functools.cache
def _tidy(root: Path, current: str) -> None:
    """Once per process and folder: mark ``current`` used, remove the
    folders of all but the KEPT_VERSIONS versions used last, and the files
    that versions before the folders left in ``root``."""
    try:
        (root / current).mkdir(parents=True, exist_ok=True)
        os.utime(root / current)
        versions = sorted((p for p in root.iterdir() if p.is_dir() and p.name.startswith("code-")
                           and p.name != current), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in versions[KEPT_VERSIONS - 1:]:
            shutil.rmtree(stale, ignore_errors=True)
        for loose in root.iterdir():
            if loose.is_file() and loose.suffix in (".o", ".json", ".ll", ".tmp"):
                loose.unlink(missing_ok=True)
    except OSError:
        pass


def _entries() -> Path:
    directory = cache_directory()
    _tidy(directory.parent, directory.name)
    return directory


def read_cached(key: str) -> MachineCode | None:
    """The entry under ``key``, or None (missing, partial or unreadable)."""
    directory = _entries()
    try:
        llvm_ir = (directory / f"{key}.ll").read_text()
        object_code = (directory / f"{key}.o").read_bytes()
        about = json.loads((directory / f"{key}.json").read_text())
        return MachineCode(llvm_ir, object_code, about["pipeline"], tuple(about["notes"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_cached(key: str, code: MachineCode) -> None:
    """Store ``code``, each file atomically (a reader never sees half a
    file) and the IR last."""
    directory = _entries()
    about = json.dumps({"pipeline": code.pipeline, "notes": list(code.notes)})
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for suffix, data in ((".o", code.object_code), (".json", about.encode()),
                             (".ll", code.llvm_ir.encode())):
            temporary = directory / f"{key}{suffix}.{os.getpid()}.tmp"
            temporary.write_bytes(data)
            os.replace(temporary, directory / f"{key}{suffix}")
    except OSError:
        pass
