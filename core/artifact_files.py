"""An artifact's files, some of them made only when read.

A target's artifact holds files that only a saved executable needs: the
cpu target's module in text form is 100+ MB for a model of real size, and
printing it takes longer than the rest of a warm compile.  So a file may
be given as a function that makes its bytes; ``ArtifactFiles`` calls it the
first time the file is read (saving the artifact, pickling it, a tool that
looks at it) and keeps what it made.  Reading, writing and iterating work
as on a dict of bytes.

    files = ArtifactFiles({"module.hpvm": lambda: print_module(m).encode()})
    files["module.hpvm"]          # printed now, once
"""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Callable, Iterator, Union

FileContent = Union[bytes, Callable[[], bytes]]


class ArtifactFiles(MutableMapping):
    """File name -> bytes; a value given as a function is made when read."""

    def __init__(self, files: dict[str, FileContent] | None = None):
        self._files: dict[str, FileContent] = dict(files or {})

    def __getitem__(self, name: str) -> bytes:
        content = self._files[name]
        if callable(content):
            content = self._files[name] = content()
        return content

    def __setitem__(self, name: str, content: FileContent) -> None:
        self._files[name] = content

    def __delitem__(self, name: str) -> None:
        del self._files[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def made(self, name: str) -> bool:
        """Whether the file's bytes exist yet (False: read it to make them)."""
        return not callable(self._files[name])

    def __reduce__(self):
        return ArtifactFiles, (dict(self.items()),)

    def __repr__(self) -> str:
        return f"ArtifactFiles({sorted(self._files)})"
