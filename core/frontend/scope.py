"""What a kernel body can see while it is translated: buffers (with the
access the node declared), scalar parameters, shape symbols, compile-time
constants, local variables and arrays; and what it used (so the program
level knows the node's ports)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.kernel import Const, Expr, Var
from ..ir.types import I64, BufferType, ScalarType
from .source import FunctionSource
from .typing_rules import Value


@dataclass
class BufferRef:
    """A buffer visible in a kernel body.  ``read_denied`` / ``write_denied``
    are the (message, fix) to report when the body reads / writes it
    against the node's declaration; None means allowed."""

    ir_name: str
    type: BufferType
    read_denied: tuple[str, str] | None = None
    write_denied: tuple[str, str] | None = None


@dataclass
class ArrayRef:
    ir_name: str
    element: ScalarType
    shape: tuple[int, ...]


@dataclass
class LocalVar:
    ir_name: str
    type: ScalarType
    weak: bool = False   # initialised from a literal, type not yet settled


@dataclass
class Usage:
    """IR names of the buffers a body read / wrote, scalar parameters and
    shape symbols it used."""

    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    scalars: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)

    def note(self, kind: str, name: str) -> None:
        items = getattr(self, kind)
        if name not in items:
            items.append(name)


class NameAllocator:
    """Fresh IR names for locals (helpers are inlined with renamed locals)."""

    def __init__(self, taken=()):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}_{n}", n + 1
        self.taken.add(name)
        return name


@dataclass
class KernelScope:
    """The names a kernel body resolves, in this order: locals and arrays,
    buffers, scalar parameters, constants, shape symbols, then the Python
    scope of the source (numbers become literals)."""

    source: FunctionSource
    buffers: dict[str, BufferRef] = field(default_factory=dict)
    scalars: dict[str, Var] = field(default_factory=dict)
    symbols: dict[str, Expr] = field(default_factory=dict)
    constants: dict[str, Value] = field(default_factory=dict)
    locals: dict[str, LocalVar] = field(default_factory=dict)
    arrays: dict[str, ArrayRef] = field(default_factory=dict)
    loop_vars: dict[str, str] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    names: NameAllocator = field(default_factory=NameAllocator)
    settled_types: dict[str, ScalarType] = field(default_factory=dict)
    settled_now: dict[str, ScalarType] = field(default_factory=dict)
    helper_stack: tuple[str, ...] = ()
    local_prefix: str = ""
    undeclared: dict[str, str] = field(default_factory=dict)  # buffer -> node name
    helpers: dict = field(default_factory=dict)  # name -> KernelFunction a reduce op calls

    def symbol(self, name: str) -> Expr | None:
        """The value of shape symbol ``name`` (recorded as used), or None."""
        expr = self.symbols.get(name)
        if isinstance(expr, Var):
            self.usage.note("symbols", expr.name)
        return expr

    def dim(self, dim) -> Value:
        """One buffer dimension as a value (ints are literals)."""
        if isinstance(dim, int):
            return Value(Const(dim, I64), weak=True)
        expr = self.symbol(dim)
        if expr is None:  # a buffer whose shape names a symbol the scope lacks
            expr = Var(dim, I64)
            self.usage.note("symbols", dim)
        return Value(expr)

    def scalar(self, name: str) -> Var:
        var = self.scalars[name]
        self.usage.note("scalars", var.name)
        return var
