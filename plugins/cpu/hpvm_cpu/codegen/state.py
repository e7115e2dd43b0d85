"""What the lowering of one LLVM function knows: its variables, buffers,
shape symbols, instance ids and the blocks it is writing into.

Every scalar variable lives in an ``alloca`` of the entry block (mem2reg /
SROA turn them into registers); the entry block stays open until the body
is done so allocas and once-per-call set-up can be added to it at any time.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from hpvm.errors import Diagnostic, Location, TargetError
from hpvm.ir.kernel import KernelFunction
from hpvm.ir.nan_free import nan_free_names
from hpvm.ir.types import ScalarType

from .llvm_types import I8, I64, POINTER, byte_size, i64, memory_type, register_type
from .loop_metadata import access_group_list


@dataclass
class Variable:
    """A mutable scalar: its alloca and IR type."""

    pointer: ir.Value
    type: ScalarType


@dataclass
class BufferView:
    """A buffer as generated code sees it: element type, data pointer, and
    one i64 per dimension (a flat buffer has one: its length).
    ``parallel``: accesses may join the instance loop's access group (true
    for buffer parameters, whose instances never conflict; false for arrays
    that instances of one chunk reuse).  ``unaliased``: no other buffer of
    the function can reach its memory (a declared array; a parameter
    aliasing.aliases_nothing accepts)."""

    element: ScalarType
    pointer: ir.Value
    dims: tuple[ir.Value, ...]
    parallel: bool = False
    unaliased: bool = False

    def __post_init__(self):
        # kernels move a narrow type's elements as its storage integers
        self.element = self.element.storage_type

    def element_count(self, builder: ir.IRBuilder) -> ir.Value:
        count = i64(1)
        for dim in self.dims:
            count = builder.mul(count, dim)
        return count


class LoweringState:
    """Shared state and small utilities of one function's lowering."""

    def __init__(self, context, function: ir.Function, kernel: KernelFunction):
        self.context = context
        self.module: ir.Module = function.module
        self.function = function
        self.kernel_name = kernel.name
        self.nan_free = nan_free_names(kernel)
        """Variables and arrays that never hold NaN (hpvm.ir.nan_free)."""
        self.entry_block = function.append_basic_block("entry")
        self.entry_builder = ir.IRBuilder(self.entry_block)
        self.builder = ir.IRBuilder(function.append_basic_block("start"))
        self.scopes: list[dict[str, Variable | BufferView]] = [{}]
        self.symbols: dict[str, ir.Value] = {}
        self.instance_ids: list[ir.Value] = []
        self.instance_counts: list[ir.Value] = []
        self.return_block: ir.Block | None = None
        """Where Return jumps in a node (the next instance); None in helpers."""
        self.return_type: ScalarType | None = None
        self.instance_group = None
        self.loop_groups: list = []
        self.reductions: list = []
        """The Reductions of the loops being emitted (innermost last)."""
        self.vector_loop = None
        """The step of the vector loop being emitted (vector_loops.py)."""

    def fail(self, message: str, fix: str = "") -> TargetError:
        """A TargetError naming this function."""
        where = Location(function=self.kernel_name)
        return TargetError(str(Diagnostic(where, f"cpu codegen: {message}", fix)))

    def finish_entry(self) -> None:
        """Close the entry block: jump to the first body block."""
        self.entry_builder.branch(self.function.blocks[1])

    # -- names -------------------------------------------------------------
    def bind(self, name: str, value: Variable | BufferView) -> None:
        self.scopes[-1][name] = value

    def lookup(self, name: str) -> Variable | BufferView | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def variable(self, name: str) -> Variable:
        found = self.lookup(name)
        if not isinstance(found, Variable):
            raise self.fail(f"'{name}' is not a declared scalar variable",
                            "declare it with a Let before using it")
        return found

    def buffer(self, name: str) -> BufferView:
        found = self.lookup(name)
        if not isinstance(found, BufferView):
            raise self.fail(f"'{name}' is not a buffer parameter or declared array",
                            "pass it as a buffer parameter or declare it with ArrayDecl")
        return found

    def push_scope(self) -> None:
        self.scopes.append({})

    def pop_scope(self) -> None:
        self.scopes.pop()

    # -- memory ------------------------------------------------------------
    def alloca(self, llvm_type: ir.Type, name: str = "", count: int | None = None) -> ir.Value:
        """Stack memory for one value (or ``count`` of them), made once per
        call in the entry block."""
        size = None if count is None else i64(count)
        return self.entry_builder.alloca(llvm_type, size=size, name=name)

    def declare_variable(self, name: str, type: ScalarType, value=None) -> Variable:
        """A new scalar variable, initialised to ``value`` (zero if None)."""
        variable = Variable(self.alloca(register_type(type), name), type)
        if value is None:
            value = ir.Constant(register_type(type), 0 if not type.is_float else 0.0)
        self.builder.store(value, variable.pointer)
        self.bind(name, variable)
        return variable

    def element_pointer(self, view: BufferView, indices: list[ir.Value]) -> ir.Value:
        """Address of ``view[indices]``: one index is flat, as many as the
        rank are row-major.  Not bounds-checked (the interpreter checks)."""
        builder = self.builder
        if not indices and not view.dims:  # a rank-0 buffer: one element
            linear = i64(0)
        elif len(indices) == 1:
            linear = indices[0]
        elif len(indices) == len(view.dims):
            linear = indices[0]
            for dim, index in zip(view.dims[1:], indices[1:]):
                linear = builder.add(builder.mul(linear, dim), index)
        else:
            raise self.fail(f"a buffer of rank {len(view.dims)} indexed with {len(indices)} indices",
                            "use one (flat) index or one index per dimension")
        return builder.gep(view.pointer, [linear], inbounds=True,
                           source_etype=memory_type(view.element))

    def access_metadata(self, parallel: bool) -> dict:
        """Metadata for a memory access (or call): the access groups of the
        loops whose iterations it may be reordered across; ``parallel``
        (see BufferView) adds the instance loop's."""
        groups = list(self.loop_groups)
        if parallel and self.instance_group is not None:
            groups.append(self.instance_group)
        group = access_group_list(self.module, groups)
        return {} if group is None else {"llvm.access.group": group}

    def fill_zero(self, builder: ir.IRBuilder, pointer: ir.Value, size_bytes: ir.Value) -> None:
        memset = self.module.declare_intrinsic("llvm.memset", [POINTER, I64])
        builder.call(memset, [pointer, ir.Constant(I8, 0), size_bytes, ir.Constant(ir.IntType(1), 0)])

    def copy_bytes(self, destination: ir.Value, source: ir.Value, size_bytes: ir.Value) -> None:
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [POINTER, POINTER, I64])
        self.builder.call(memcpy, [destination, source, size_bytes, ir.Constant(ir.IntType(1), 0)])

    def byte_count(self, view: BufferView, builder: ir.IRBuilder | None = None) -> ir.Value:
        builder = builder or self.builder
        return builder.mul(view.element_count(builder), i64(byte_size(view.element)))

    # -- blocks ------------------------------------------------------------
    def new_block(self, name: str) -> ir.Block:
        return self.function.append_basic_block(name)

    def continue_in(self, block: ir.Block) -> None:
        self.builder.position_at_end(block)

    def jump(self, block: ir.Block) -> None:
        """Branch to ``block`` unless the current block already ended."""
        if not self.builder.block.is_terminated:
            self.builder.branch(block)
