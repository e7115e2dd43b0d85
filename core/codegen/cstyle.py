"""One C-style renderer for every back end that emits C-like kernels
(OpenCL C for GPUs, OpenCL for FPGAs, plain C).

    renderer = MyRenderer(module)             # a subclass setting the hooks
    renderer.add_entry("matmul", rank=2)      # one entry per node kernel
    source = renderer.finish()                # RenderedSource: text + origins

:class:`CStyleRenderer` renders statements, expressions and helper
functions once; subclasses override small hooks for what differs between
dialects: type names and address-space qualifiers, how an instance reads
its id and count, loop pragmas (``#pragma unroll N`` vs Intel's
``#pragma ii``), math function names, f16 storage and rounding, atomics,
barriers, and the entry function itself.  The default entry is plain C: a
loop nest over the replication (what a single-work-item FPGA kernel or a
CPU reference wants).

Conventions of the generated code: every invented name starts with
``hpvm_``; an instance's ids and counts are the variables ``hpvm_id<d>``
and ``hpvm_count<d>`` (d = 0..2, IR dimension order), which helpers
receive as hidden trailing arguments; a buffer travels as a pointer
followed by one ``long`` per dimension; helpers are specialised by the
address space of each buffer argument (C has no generic pointers).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import TargetError
from ..ir import kernel as k
from ..ir.graph import Module
from ..ir.types import BufferType, ScalarType
from ..ir.visit import walk
from .cstyle_expressions import BufferBinding, CStyleExpressions, ScalarBinding
from .cstyle_statements import CStyleStatements
from .source import C_KEYWORDS, Identifiers, Origin, SourceWriter

DIMS = 3
C99_TYPES = {"bool": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
             "i64": "int64_t", "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t",
             "u64": "uint64_t", "f16": "float", "f32": "float", "f64": "double"}


@dataclass(frozen=True)
class RenderedSource:
    """The generated translation unit and, per line, where it came from."""

    text: str
    writer: SourceWriter
    entries: dict[str, str]
    """Entry function name by ``"<function>/<rank>"``."""
    features: frozenset[str]
    """What the code needs from a device: ``fp64``, ``fp16``, ``atomics``,
    ``barrier``, ``local_arrays``."""

    def origin_of(self, line_number: int) -> Origin | None:
        return self.writer.origin_of(line_number)

    def line(self, line_number: int) -> str:
        lines = self.writer.lines
        return lines[line_number - 1] if 1 <= line_number <= len(lines) else ""


class CStyleRenderer(CStyleStatements, CStyleExpressions):
    """Renders kernel IR as C; see the module docstring for the hooks."""

    language = "C"
    type_names: dict[str, str] = C99_TYPES
    space_qualifiers: dict[str, str] = {"global": "", "local": "", "private": ""}
    helper_qualifier = "static inline"
    entry_qualifier = ""
    index_type: str | None = None
    """The C type buffer indices are flattened in (each index and dimension
    cast to it), or None: the indices' own type (i64).  A narrower type
    gives the same element wherever the access is in bounds and the buffer
    has at most that type's largest value of elements: every index then
    lies in [0, its dimension), so no partial sum of the flattening
    exceeds the flat index."""
    reserved_names: frozenset[str] = C_KEYWORDS | frozenset(
        "NAN INFINITY fabs fabsf fmin fminf fmax fmaxf fmod fmodf sqrt sqrtf exp expf log logf "
        "sin sinf cos cosf tanh tanhf floor floorf ceil ceilf pow powf abs min max".split())

    def __init__(self, module: Module):
        self.module = module
        self.names = Identifiers(self.reserved_names)
        self.features: set[str] = set()
        self._support: dict[str, list[str]] = {}
        self._helpers: dict[tuple, str] = {}
        self._pending: list[tuple] = []
        self._prototypes: dict[str, str] = {}
        self._helper_code = SourceWriter()
        self._entry_code = SourceWriter()
        self._entries: dict[str, str] = {}
        self.writer = self._entry_code
        self.scopes: list[dict] = []
        self.function: k.KernelFunction | None = None

    # ----------------------------------------------------------- hooks
    def type_name(self, t: ScalarType) -> str:
        """The C type of a scalar in registers (a narrow storage type's is
        its storage integer's)."""
        return self.type_names[t.storage_type.name]

    def storage_type(self, t: ScalarType, space: str) -> str:
        """The C element type of a buffer or array in ``space``."""
        if t.is_bool:
            return self.type_names["u8"]
        if t.bits == 16 and t.is_float and not t.is_narrow:
            return self.half_storage_type(space)
        return self.type_name(t)

    def half_storage_type(self, space: str) -> str:
        if space == "global":
            raise TargetError(f"{self.language}: f16 buffers are not supported by this renderer")
        return self.type_names["f32"]

    def pointer_type(self, element: ScalarType, space: str, const: bool = False,
                     restrict: bool = False) -> str:
        qualifier = self.space_qualifiers[space]
        text = f"{qualifier} " if qualifier else ""
        text += ("const " if const else "") + self.storage_type(element, space) + "*"
        return text + (" restrict" if restrict else "")

    def instance_id(self, dim: int) -> str:
        return f"hpvm_id{dim}"

    def instance_count(self, dim: int) -> str:
        return f"hpvm_count{dim}"

    def loop_pragmas(self, loop: k.For) -> list[str]:
        return [f"#pragma unroll {loop.unroll}"] if loop.unroll else []

    def math_function(self, name: str, t: ScalarType) -> str:
        """C99 names: ``sqrtf`` for f32, ``sqrt`` for f64."""
        return name + ("f" if t.bits == 32 else "")

    def integer_abs(self, value: str, t: ScalarType) -> str:
        unsigned = self._as_unsigned(value, t)
        return self.wrap(f"({value} < 0 ? ({self.type_name(t)})(0{self._unsigned_suffix(t)} - "
                         f"{unsigned}) : {value})", t)

    def integer_min_max(self, name: str, a: str, b: str, t: ScalarType) -> str:
        helper = f"hpvm_{name}_{t.name}"
        c_type = self.type_name(t)
        symbol = "<" if name == "min" else ">"
        self.require(helper, [f"{self.helper_qualifier} {c_type} {helper}({c_type} a, {c_type} b) "
                              f"{{ return a {symbol} b ? a : b; }}"])
        return f"{helper}({a}, {b})"

    def round_f16(self, text: str) -> str:
        raise TargetError(f"{self.language}: f16 arithmetic is not supported by this renderer")

    def load_element(self, binding: BufferBinding, index: str) -> str:
        text = f"{binding.c_name}[{index}]"
        return f"({text} != 0)" if binding.element.is_bool else text

    def store_element(self, binding: BufferBinding, index: str, value: str) -> str:
        if binding.element.is_bool:
            value = f"({self.type_names['u8']}){value}"
        return f"{binding.c_name}[{index}] = {value};"

    def atomic_update(self, op: str, binding: BufferBinding, index: str, value: str,
                      t: ScalarType) -> str:
        """An expression applying the atomic update, whose value is the old
        element."""
        raise TargetError(f"{self.language}: atomic updates are not supported by this renderer")

    def barrier(self) -> str:
        raise TargetError(f"{self.language}: barriers are not supported by this renderer")

    def node_return(self) -> str:
        """What ``return`` in a node kernel becomes (end this instance)."""
        return "goto hpvm_next_instance;"

    def preamble(self) -> list[str]:
        """Lines before everything else (includes, extension pragmas)."""
        return ["#include <math.h>", "#include <stdbool.h>", "#include <stdint.h>"]

    # ------------------------------------------------------ support code
    def require(self, name: str, lines: list[str]) -> None:
        """Add a support function (once, by name) before all user code."""
        self._support.setdefault(name, lines)

    # ----------------------------------------------------------- scopes
    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise TargetError(f"{self.language}: '{name}' is not defined in function "
                          f"'@{self.function.name if self.function else '?'}'")

    def buffer(self, name: str) -> BufferBinding:
        binding = self.lookup(name)
        if not isinstance(binding, BufferBinding):
            raise TargetError(f"{self.language}: '{name}' is not a buffer")
        return binding

    def bind(self, name: str, binding) -> None:
        self.scopes[-1][name] = binding

    # -------------------------------------------------------- functions
    def parameter_bindings(self, kernel: k.KernelFunction, spaces: dict[str, str]) -> list[str]:
        """Bind ``kernel``'s parameters in a fresh scope; returns the C
        parameter declarations (buffers: pointer, then their dims)."""
        self.scopes = [{}]
        declarations = []
        for p in kernel.params:
            c_name = self.names(p.name)
            if isinstance(p.type, BufferType):
                space = spaces.get(p.name, "global")
                dims = self.dim_names(c_name, p.type)
                declarations.extend(self.buffer_declarations(p, c_name, space, dims))
                shown = tuple(str(d) if isinstance(d, int) else name
                              for d, name in zip(p.type.shape or (None,), dims))
                self.bind(p.name, BufferBinding(c_name, p.type.element, space, shown,
                                                p.type.shape is None))
            else:
                declarations.append(f"{self.parameter_type(p.type)} {c_name}")
                self.bind(p.name, ScalarBinding(c_name, p.type))
        return declarations

    def buffer_declarations(self, p, c_name: str, space: str, dims: list[str]) -> list[str]:
        """The C parameters passing buffer parameter ``p``: its pointer,
        then one ``long`` per dimension named ``dims``."""
        pointer = self.pointer_type(p.type.element, space, p.direction == "in",
                                    self.restricted(p))
        return [f"{pointer} {c_name}"] + [f"long {d}" for d in dims]

    def restricted(self, p) -> bool:
        """Whether buffer parameter ``p`` is declared ``restrict``: where
        the IR says so."""
        return p.restrict

    def parameter_type(self, t: ScalarType) -> str:
        """The C type of a scalar parameter (entries may need other types
        than registers: OpenCL kernels take no bool)."""
        return self.type_name(t)

    @staticmethod
    def dim_names(c_name: str, t: BufferType) -> list[str]:
        return [f"hpvm_{c_name}_d{i}" for i in range(1 if t.shape is None else len(t.shape))]

    def define_shape_symbols(self, kernel: k.KernelFunction) -> None:
        """``const long N = <dim>;`` for every shape symbol that no scalar
        parameter defines (the first dimension naming it wins)."""
        for p in kernel.params:
            if not isinstance(p.type, BufferType) or p.type.shape is None:
                continue
            binding = self.buffer(p.name)
            for dim, c_dim in zip(p.type.shape, self.dim_names(binding.c_name, p.type)):
                if isinstance(dim, str) and dim not in self.scopes[0]:
                    c_name = self.names(dim)
                    c_type = self.shape_symbol_type(dim)
                    cast = "" if c_type == "long" else f"({c_type})"
                    self.writer.line(f"const {c_type} {c_name} = {cast}{c_dim};")
                    self.bind(dim, ScalarBinding(c_name, k.I64))

    def shape_symbol_type(self, name: str) -> str:
        """The C type shape symbol ``name`` is declared in."""
        return "long"

    def hidden_parameters(self) -> list[str]:
        return [f"long {self.instance_id(d)}" for d in range(DIMS)] + [
            f"long {self.instance_count(d)}" for d in range(DIMS)]

    def hidden_arguments(self) -> list[str]:
        return [self.instance_id(d) for d in range(DIMS)] + [
            self.instance_count(d) for d in range(DIMS)]

    def call_text(self, call: k.Call) -> str:
        callee = self.module.function(call.function)
        args, spaces = [], []
        for param, arg in zip(callee.params, call.args):
            if isinstance(param.type, BufferType):
                binding = self.buffer(arg.name)
                spaces.append(binding.space)
                args.append(binding.c_name)
                args.extend(self._passed_dims(binding, param, callee))
            else:
                args.append(self.converted(arg, param.type))
        name = self.helper(call.function, tuple(spaces))
        return f"{name}({', '.join(args + self.hidden_arguments())})"

    def _passed_dims(self, binding: BufferBinding, param, callee) -> list[str]:
        wanted = len(param.type.shape) if param.type.shape else 1
        if param.type.shape is None:
            return [binding.length()]
        if len(binding.dims) != wanted or binding.flat:
            raise TargetError(f"{self.language}: '@{callee.name}' expects a rank-{wanted} buffer "
                              f"for '{param.name}'; pass a buffer of that rank")
        return list(binding.dims)

    def helper(self, name: str, spaces: tuple[str, ...]) -> str:
        """The C name of helper ``name`` specialised for buffer arguments
        in ``spaces``; rendered later."""
        key = (name, spaces)
        if key not in self._helpers:
            suffix = "" if all(s == "global" for s in spaces) else "_" + "".join(s[0] for s in spaces)
            self._helpers[key] = f"hpvm_f_{self.names(name)}{suffix}"
            self._pending.append(key)
        return self._helpers[key]

    def _render_helper(self, name: str, spaces: tuple[str, ...]) -> None:
        kernel = self.module.function(name)
        buffers = [p.name for p in kernel.params if isinstance(p.type, BufferType)]
        self._begin(kernel, self._helper_code)
        self.in_entry = False
        declarations = self.parameter_bindings(kernel, dict(zip(buffers, spaces)))
        result = "void" if kernel.return_type is None else self.type_name(kernel.return_type)
        c_name = self._helpers[(name, spaces)]
        signature = (f"{self.helper_qualifier} {result} {c_name}("
                     + ", ".join(declarations + self.hidden_parameters()) + ")")
        self._prototypes[c_name] = signature + ";"
        self.writer.open(signature)
        self.define_shape_symbols(kernel)
        self.body(kernel.body)
        if kernel.return_type is not None:
            self.writer.line(f"return {self.literal(0, kernel.return_type)};")
        self.writer.close()
        self.writer.line()

    def _begin(self, kernel: k.KernelFunction, writer: SourceWriter) -> None:
        self.function = kernel
        self.writer = writer
        writer.origin = Origin(kernel.name)
        for p in kernel.params:
            self._note_type(p.type.element if isinstance(p.type, BufferType) else p.type)
        for item in walk(kernel.body):
            self._note_type(getattr(item, "type", None))
            if isinstance(item, k.ArrayDecl):
                self._note_type(item.element)
                if item.space == "local":
                    self.features.add("local_arrays")
            elif isinstance(item, k.Barrier):
                self.features.add("barrier")
            elif isinstance(item, k.AtomicUpdate):
                self.features.add("atomics")

    def _note_type(self, t) -> None:
        """Record the device features a type needs (see RenderedSource)."""
        if isinstance(t, ScalarType) and t.is_float and t.bits != 32:
            self.features.add("fp64" if t.bits == 64 else "fp16")

    # ----------------------------------------------------------- entries
    def entry_name(self, function: str, rank: int) -> str:
        return f"hpvm_k_{self.names(function)}_{rank}d"

    def add_entry(self, function: str, rank: int) -> str:
        """Render the entry running ``function`` replicated in ``rank``
        dimensions; returns its C name."""
        kernel = self.module.function(function)
        self._begin(kernel, self._entry_code)
        name = self.entry_name(function, rank)
        self.in_entry = True
        self.render_entry(kernel, rank, name)
        self.in_entry = False
        self._entries[f"{function}/{rank}"] = name
        self.writer.line()
        return name

    def render_entry(self, kernel: k.KernelFunction, rank: int, name: str) -> None:
        """Default entry: ``void name(params..., long hpvm_count0, ...)``
        looping over every instance (local arrays: one for the whole
        replication, declared before the loops)."""
        declarations = self.parameter_bindings(kernel, {})
        counts = [f"long {self.instance_count(d)}" for d in range(rank)]
        qualifier = f"{self.entry_qualifier} " if self.entry_qualifier else ""
        self.writer.open(f"{qualifier}void {name}({', '.join(declarations + counts)})")
        for d in range(rank, DIMS):
            self.writer.line(f"const long {self.instance_count(d)} = 1;")
        self.define_shape_symbols(kernel)
        self.declare_local_arrays(kernel)
        for d in range(DIMS):
            self.writer.open(f"for (long {self.instance_id(d)} = 0; {self.instance_id(d)} < "
                             f"{self.instance_count(d)}; {self.instance_id(d)}++)")
        self.body(kernel.body)
        self.writer.line("hpvm_next_instance: ;")
        for _ in range(DIMS + 1):
            self.writer.close()

    def finish(self) -> RenderedSource:
        """Render the pending helpers and assemble the translation unit:
        preamble, support functions, helper prototypes, helpers, entries."""
        while self._pending:
            self._render_helper(*self._pending.pop(0))
        out = SourceWriter()
        for line in self.preamble():
            out.line(line)
        out.line()
        for lines in self._support.values():
            for line in lines:
                out.line(line)
            out.line()
        for (name, spaces), c_name in self._helpers.items():
            out.origin = Origin(name)
            out.line(self._prototypes[c_name])
        out.origin = Origin()
        out.line()
        out.extend(self._helper_code)
        out.extend(self._entry_code)
        return RenderedSource(out.text, out, dict(self._entries), frozenset(self.features))
