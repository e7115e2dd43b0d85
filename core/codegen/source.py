"""Generated source text that remembers where each line came from, and C
identifiers for IR names.

A :class:`SourceWriter` collects lines with an :class:`Origin` (the kernel
function and the IR statement that produced them), so a compiler error at
``line 42`` of the generated code can be reported against the IR.
:class:`Identifiers` turns IR names (any string) into C identifiers that
collide neither with the language's reserved words nor with generated names.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from ..ir.kernel import Stmt
from ..ir.text import print_stmts

GENERATED_PREFIX = "hpvm_"
"""Every name the code generator invents starts with this prefix; IR names
that do are renamed, so the two never collide."""

C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while bool true false main NULL _Bool
""".split())

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Origin:
    """Where a generated line came from: a kernel function and, inside it,
    an IR statement (None for the function's frame: signature, prologue)."""

    function: str | None = None
    stmt: Stmt | None = None

    def describe(self) -> str:
        """The IR behind the line in words (the statement's first line)."""
        if self.stmt is None:
            return f"function '@{self.function}'" if self.function else "generated support code"
        first = print_stmts((_without_bodies(self.stmt),)).splitlines()[0].strip()
        return f"function '@{self.function}': {first}"


def _without_bodies(stmt: Stmt) -> Stmt:
    """``stmt`` with nested statement lists emptied: its first printed line
    without printing (and paying for) everything inside."""
    nested = {f.name: () for f in dataclasses.fields(stmt)
              if isinstance(getattr(stmt, f.name), tuple) and getattr(stmt, f.name)
              and all(isinstance(v, Stmt) for v in getattr(stmt, f.name))}
    return dataclasses.replace(stmt, **nested) if nested else stmt


@dataclass
class SourceWriter:
    """Lines of source with their origins; ``indent`` nests blocks."""

    lines: list[str] = field(default_factory=list)
    origins: list[Origin] = field(default_factory=list)
    depth: int = 0
    origin: Origin = Origin()

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")
        self.origins.append(self.origin)

    def open(self, text: str) -> None:
        """``text {`` and indent."""
        self.line(f"{text} {{" if text else "{")
        self.depth += 1

    def close(self, text: str = "}") -> None:
        self.depth -= 1
        self.line(text)

    def extend(self, other: "SourceWriter") -> None:
        self.lines.extend(other.lines)
        self.origins.extend(other.origins)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def origin_of(self, line_number: int) -> Origin | None:
        """The origin of 1-based ``line_number``; None outside the text."""
        if 1 <= line_number <= len(self.origins):
            return self.origins[line_number - 1]
        return None


class Identifiers:
    """C identifiers for IR names: a valid, unreserved name stays as it is;
    any other becomes ``hpvm_u<n>_<letters>`` (stable per name)."""

    def __init__(self, reserved: frozenset[str]):
        self.reserved = reserved
        self._renamed: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if (_IDENTIFIER.match(name) and name not in self.reserved
                and not name.startswith(GENERATED_PREFIX)):
            return name
        if name not in self._renamed:
            letters = re.sub(r"[^A-Za-z0-9_]", "_", name)[:24]
            self._renamed[name] = f"{GENERATED_PREFIX}u{len(self._renamed)}_{letters}"
        return self._renamed[name]
