"""Reading and writing the folders executables and artifacts are saved
in, safely: every file name stays inside its folder, every file carries a
sha256 in its manifest that is checked when it is read back (a file
changed after saving is refused, naming it), and a damaged JSON manifest is
a located error, not a traceback.

A saved executable holds code for the machine (LLVM IR, OpenCL C, object
code): loading one means trusting its author, as with a shared library.
The checks here catch damage and mistakes; they are no signature.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import HpvmError

DAMAGED_FIX = "the saved executable is damaged or was changed after saving: compile it again"


class SavedFolderError(HpvmError):
    """A saved executable or artifact that cannot be read back as saved."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def safe_name(folder: Path, name: Any, manifest: Path) -> Path:
    """``folder / name`` when ``name`` is a relative path that stays inside
    ``folder``; SavedFolderError naming ``manifest`` otherwise."""
    if not isinstance(name, str) or not name:
        raise SavedFolderError(f"{manifest}: file name {name!r} is not a non-empty string "
                               f"(fix: {DAMAGED_FIX})")
    parts = PurePosixPath(name).parts
    if PurePosixPath(name).is_absolute() or ".." in parts or "\\" in name or "\0" in name:
        raise SavedFolderError(f"{manifest}: file name '{name}' points outside its folder; "
                               f"it is refused (fix: {DAMAGED_FIX})")
    path = folder.joinpath(*parts)
    if not path.resolve().is_relative_to(folder.resolve()):
        raise SavedFolderError(f"{manifest}: file '{name}' resolves outside its folder "
                               f"(a symbolic link?); it is refused (fix: {DAMAGED_FIX})")
    return path


def read_checked(folder: Path, name: str, expected_digest: Any, manifest: Path) -> bytes:
    """The bytes of file ``name`` of ``folder``, checked against the sha256
    the manifest recorded."""
    path = safe_name(folder, name, manifest)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SavedFolderError(f"{path}: cannot be read ({error.strerror or error}) "
                               f"(fix: {DAMAGED_FIX})") from None
    if digest(data) != expected_digest:
        raise SavedFolderError(f"{path}: its content differs from what was saved (sha256 "
                               f"mismatch); it is refused (fix: {DAMAGED_FIX})")
    return data


def write_files(folder: Path, files: dict[str, bytes]) -> dict[str, str]:
    """Write ``files`` (names checked) into ``folder``; their sha256 by name."""
    digests = {}
    for name, data in files.items():
        path = safe_name(folder, name, folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        digests[name] = digest(data)
    return digests


def read_manifest(path: Path, required: dict[str, type]) -> dict:
    """The JSON object in ``path`` with at least the ``required`` keys of
    the given types; SavedFolderError saying where it is wrong."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SavedFolderError(f"{path}: missing (fix: {DAMAGED_FIX})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SavedFolderError(f"{path}: cannot be read ({error}) (fix: {DAMAGED_FIX})") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as error:
        raise SavedFolderError(f"{path}:{error.lineno}:{error.colno}: not valid JSON "
                               f"({error.msg}) (fix: {DAMAGED_FIX})") from None
    except RecursionError:
        raise SavedFolderError(f"{path}: JSON nested too deeply (fix: {DAMAGED_FIX})") from None
    if not isinstance(manifest, dict):
        raise SavedFolderError(f"{path}: holds {type(manifest).__name__}, not a JSON object "
                               f"(fix: {DAMAGED_FIX})")
    for key, kind in required.items():
        if not isinstance(manifest.get(key), kind):
            raise SavedFolderError(f"{path}: '{key}' is missing or not a {kind.__name__} "
                                   f"(fix: {DAMAGED_FIX})")
    return manifest


def write_json(path: Path, value: dict) -> None:
    """Write ``value`` as JSON through a temporary file (never half a file)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    os.replace(temporary, path)
