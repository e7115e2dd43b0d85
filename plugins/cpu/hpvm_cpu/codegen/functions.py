"""LLVM functions made from kernel functions: node entries (the replication
loop nest around the body, behind the slot-array ABI of abi.py) and helpers
(internal, always inlined)."""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from hpvm.codegen.aliasing import aliases_nothing
from hpvm.errors import TargetError
from hpvm.ir.graph import Module
from hpvm.ir.kernel import KernelFunction
from hpvm.ir.parameter import Parameter
from hpvm.ir.types import I64 as I64_SCALAR
from hpvm.ir.types import BufferType

from . import arithmetic
from .abi import HELPER_PREFIX, ArgumentLayout, BufferSlots, dim_count, entry_symbol
from .llvm_types import I8, I64, POINTER, VOID, constant, i64, register_type
from .replication import plan_strips, replication_loops
from .state import BufferView
from .statements import StatementLowering


@dataclass
class Helper:
    kernel: KernelFunction
    function: ir.Function


class ModuleContext:
    """One LLVM module being filled with node entries and their helpers."""

    def __init__(self, module: Module, llvm_module: ir.Module, lanes: int = 0, rows: int = 1,
                 vector_bits: int = 0):
        self.module = module
        self.llvm_module = llvm_module
        self.lanes = lanes
        self.rows = rows
        self.vector_bits = vector_bits
        """Vector register width for loops emitted as vectors (0: none)."""
        self.helpers: dict[str, Helper] = {}

    def kernel(self, name: str) -> KernelFunction:
        try:
            return self.module.function(name)
        except KeyError as error:
            raise TargetError(f"cpu codegen: {error.args[0]}") from None

    def helper(self, name: str) -> Helper:
        """The LLVM function of helper ``name``, defined on first use."""
        if name not in self.helpers:
            kernel = self.kernel(name)
            function = ir.Function(self.llvm_module, _helper_signature(kernel), HELPER_PREFIX + name)
            self.helpers[name] = Helper(kernel, function)
            _define_helper(self, kernel, function)
        return self.helpers[name]

    def add_node(self, function_name: str, rank: int) -> ArgumentLayout:
        """Define the entry of a node running ``function_name`` replicated
        in ``rank`` dimensions; returns its argument layout."""
        kernel = self.kernel(function_name)
        layout = ArgumentLayout.of(kernel, rank)
        implementation = _define_node_body(self, kernel, layout)
        _define_entry(self.llvm_module, entry_symbol(function_name), layout, implementation)
        return layout


def _buffer_params(parameter: Parameter) -> list[ir.Type]:
    return [POINTER] + [I64] * dim_count(parameter.type)


def _helper_signature(kernel: KernelFunction) -> ir.FunctionType:
    params: list[ir.Type] = []
    for parameter in kernel.params:
        if isinstance(parameter.type, BufferType):
            params.extend(_buffer_params(parameter))
        else:
            params.append(register_type(parameter.type))
    params.extend([I64] * 6)  # instance ids and counts of dims 0..2
    result = VOID if kernel.return_type is None else register_type(kernel.return_type)
    return ir.FunctionType(result, params)


def _internal(function: ir.Function) -> None:
    function.linkage = "internal"
    function.attributes.add("alwaysinline")
    function.attributes.add("nounwind")


def _bind_params(lowering: StatementLowering, kernel: KernelFunction, values,
                 parallel: bool) -> dict[str, BufferView]:
    """Bind the kernel's parameters to ``values`` (an iterator of LLVM
    arguments: a buffer's pointer and dims, a scalar's value); returns the
    buffer views by name."""
    views: dict[str, BufferView] = {}
    for parameter in kernel.params:
        if isinstance(parameter.type, BufferType):
            pointer = next(values)
            shape = (None,) if parameter.type.shape is None else parameter.type.shape
            received = [next(values) for _ in shape]
            # Fixed dimensions become constants: cheaper indexing.
            dims = tuple(i64(d) if isinstance(d, int) else v for d, v in zip(shape, received))
            # A node's buffers are the runtime's (aliasing.py); a helper's
            # may be one buffer of its caller passed twice.
            unaliased = parallel and aliases_nothing(parameter, kernel, updated=True)
            views[parameter.name] = BufferView(parameter.type.element, pointer, dims, parallel,
                                               unaliased)
            lowering.bind(parameter.name, views[parameter.name])
        else:
            lowering.declare_variable(parameter.name, parameter.type, next(values))
    _bind_shape_symbols(lowering, kernel, views)
    return views


def _bind_shape_symbols(lowering: StatementLowering, kernel: KernelFunction, views) -> None:
    """Each shape symbol reads as the integer scalar parameter of that name
    if there is one, else as the first buffer dimension it names."""
    scalars = {p.name: p for p in kernel.params if not p.is_buffer and p.type.is_int}
    for parameter in kernel.params:
        if not isinstance(parameter.type, BufferType) or parameter.type.shape is None:
            continue
        for dim, value in zip(parameter.type.shape, views[parameter.name].dims):
            if isinstance(dim, str) and dim not in lowering.symbols:
                if dim in scalars:
                    variable = lowering.variable(dim)
                    value = lowering.builder.load(variable.pointer, typ=register_type(variable.type))
                    value = arithmetic.convert(lowering.builder, value, variable.type, I64_SCALAR)
                lowering.symbols[dim] = value


def _define_helper(context: ModuleContext, kernel: KernelFunction, function: ir.Function) -> None:
    _internal(function)
    lowering = StatementLowering(context, function, kernel)
    lowering.return_type = kernel.return_type
    arguments = iter(function.args)
    _bind_params(lowering, kernel, arguments, parallel=False)
    hidden = list(arguments)
    lowering.instance_ids, lowering.instance_counts = hidden[:3], hidden[3:]
    lowering.statements(kernel.body)
    if kernel.return_type is None:
        lowering.builder.ret_void()
    else:  # falling off the end of a value-returning helper: zero
        lowering.builder.ret(constant(0, kernel.return_type))
    lowering.finish_entry()


def _node_signature(kernel: KernelFunction, layout: ArgumentLayout) -> ir.FunctionType:
    params: list[ir.Type] = []
    for parameter, slots in zip(kernel.params, layout.params):
        if isinstance(slots, BufferSlots):
            params.extend(_buffer_params(parameter) + [POINTER] * (slots.scratch is not None))
        else:
            params.append(register_type(parameter.type))
    return ir.FunctionType(VOID, params + [I64] * (layout.rank + 2))


def _define_node_body(context: ModuleContext, kernel: KernelFunction, layout: ArgumentLayout) -> ir.Function:
    """``<entry>.body(params..., counts..., begin, end)``: the replication
    loop nest; dimension 0 runs [begin, end), the others in full."""
    signature = _node_signature(kernel, layout)
    function = ir.Function(context.llvm_module, signature, entry_symbol(kernel.name) + ".body")
    _internal(function)
    lowering = StatementLowering(context, function, kernel)
    arguments = iter(function.args)
    values: list[ir.Value] = []
    scratch: dict[str, ir.Value] = {}
    for parameter, slots in zip(kernel.params, layout.params):
        if not isinstance(slots, BufferSlots):
            values.append(next(arguments))
            continue
        pointer = next(arguments)
        if aliases_nothing(parameter, kernel, updated=True):
            pointer.add_attribute("noalias")
        values.append(pointer)
        values.extend(next(arguments) for _ in slots.dims)
        if slots.scratch is not None:
            scratch[parameter.name] = next(arguments)
    views = _bind_params(lowering, kernel, iter(values), parallel=True)
    rest = list(arguments)
    lowering.instance_counts = rest[:layout.rank]
    begin, end = rest[layout.rank:]
    strips = plan_strips(kernel, layout.rank, context.lanes, context.rows)
    replication_loops(lowering, kernel.body, begin, end, strips, views, scratch)
    lowering.builder.ret_void()
    lowering.finish_entry()
    return function


def _define_entry(llvm_module: ir.Module, symbol: str, layout: ArgumentLayout,
                  implementation: ir.Function) -> None:
    """``void symbol(i64 *slots, i64 begin, i64 end)``: unpack the slots
    and call the body."""
    function = ir.Function(llvm_module, ir.FunctionType(VOID, [POINTER, I64, I64]), symbol)
    function.attributes.add("nounwind")
    slots, begin, end = function.args
    slots.name, begin.name, end.name = "slots", "dim0_begin", "dim0_end"
    builder = ir.IRBuilder(function.append_basic_block("entry"))

    def slot(index: int, llvm_type: ir.Type) -> ir.Value:
        address = builder.gep(slots, [i64(index)], inbounds=True, source_etype=I64)
        return builder.load(address, typ=llvm_type, align=8)

    counts = [slot(d, I64) for d in range(layout.rank)]
    arguments: list[ir.Value] = []
    for param in layout.params:
        if isinstance(param, BufferSlots):
            arguments.append(slot(param.pointer, POINTER))
            arguments.extend(slot(d, I64) for d in param.dims)
            if param.scratch is not None:
                arguments.append(slot(param.scratch, POINTER))
        elif param.type.is_bool:
            arguments.append(builder.icmp_unsigned("!=", slot(param.slot, I8), ir.Constant(I8, 0)))
        else:
            arguments.append(slot(param.slot, register_type(param.type)))
    builder.call(implementation, arguments + counts + [begin, end])
    builder.ret_void()



def build_module(module: Module, ranks: dict[str, int], name: str, lanes: int = 0,
                 rows: int = 1, vector_width: int | None = None, vector_bits: int = 0
                 ) -> tuple[str, dict[str, ArgumentLayout]]:
    """Unoptimised LLVM IR text with one node entry per ``ranks`` item
    (function name: replication rank >= 1), and their argument layouts.
    ``lanes`` > 1 runs kernels that profit in blocks of ``rows`` x ``lanes``
    instances (lanes.py).  ``vector_width`` (bits) overrides the width of
    the vectors LLVM prefers for the CPU (256 on Intel's AVX-512 CPUs);
    ``vector_bits``, the machine's vector registers, the width of loops
    emitted as vectors (vector_loops.py; 0: none)."""
    llvm_module = ir.Module(name=name)
    context = ModuleContext(module, llvm_module, lanes, rows, vector_bits)
    layouts = {function: context.add_node(function, rank) for function, rank in ranks.items()}
    if vector_width:
        for function in llvm_module.functions:
            if not function.is_declaration:  # not libm's or LLVM's intrinsics
                # A string attribute: llvmlite's add() knows only keyword ones.
                set.add(function.attributes, f'"prefer-vector-width"="{vector_width}"')
    return str(llvm_module), layouts
