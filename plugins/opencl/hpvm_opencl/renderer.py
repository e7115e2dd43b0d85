"""OpenCL C: the C-style renderer of hpvm.codegen with OpenCL's spellings.

Node entries are ``__kernel`` functions.  IR replication dimension d is
OpenCL dimension ``rank - 1 - d``, so the innermost IR dimension is OpenCL
dimension 0 (consecutive work items touch consecutive elements: coalesced).
The true replication sizes arrive as arguments (``hpvm_count<d>``), because
the global size may be padded up to a multiple of the work-group size;
padded work items return at once (kernels that synchronise their work group
are never padded, see launch.py).

Buffer indices are flattened in the type ``HPVM_INDEX`` (each index and
dimension cast to it), a macro the build sets: ``int`` for buffers of at
most INT_MAX elements (program.py builds that program first; a GPU does
32-bit integer arithmetic fast, 64-bit in several instructions: the
suite's stencil on the H200, ten sweeps of 512 x 512 x 64, 3.0 -> 2.1 ms
a call), ``long`` otherwise (the default of the source itself,
built when a launch first passes a larger buffer).  In bounds, both give
the same element (CStyleRenderer.index_type says why).

Work items may run several instances each (steps.py).

An f32 division by a constant, on a device with ``cl_khr_fp64`` and
without fast math, is computed in double precision from the constant's
reciprocal and one correction: q = x * (1/c), r = fma(-q, c, x) (exact),
q' = fma(r, 1/c, q) is the correctly rounded double quotient (Markstein's
theorem; no double overflows or underflows from f32 operands), and
rounding it to f32 gives the correctly rounded f32 quotient (53 >= 2 * 24
+ 2: double rounding is innocuous for division, Figueroa).  Zeros,
infinities and NaNs (r zero or NaN) take q.  Bit for bit the quotient the
division gives (16.7M values of every magnitude against seven divisors on
the H200), but straight-line code, where NVIDIA's correctly rounded
division has a slow path: a row blur dividing by 3 with adjacent
instances a work item (steps.py) went from 0.40 to 0.88 of a copy
kernel's bandwidth, the column blur from 0.36 to 0.79.

f16 needs no extension: values live in ``float`` registers, global f16
buffers are read with ``vload_half`` and written with ``vstore_half_rte``,
and every f16 result is rounded through ``hpvm_round_half``.  f64 needs
``cl_khr_fp64``; 64-bit atomics need ``cl_khr_int64_*_atomics``; float
atomics are compare-and-swap loops.
"""
from __future__ import annotations

import math

import numpy as np

from hpvm.codegen import BufferBinding, CStyleRenderer
from hpvm.codegen.aliasing import aliases_nothing
from hpvm.codegen.cstyle import DIMS
from hpvm.codegen.cstyle_expressions import exact_reciprocal
from hpvm.errors import TargetError
from hpvm.ir.kernel import AtomicUpdate, Binary, Call, Const, KernelFunction, Load, Store, Var
from hpvm.ir.types import F16, F32, ScalarType
from hpvm.ir.visit import walk

from .lanes import LANES, MarchLanes
from .launch_tests import LaunchTests
from .layout import synchronizes, written_private_buffers
from .narrowing import NarrowIndices
from .steps import LAYOUTS, PER_ITEM, WorkItemSteps
from .sincos import SharedSinCos

OPENCL_TYPES = {"bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
                "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
                "f16": "float", "f32": "float", "f64": "double"}
OPENCL_RESERVED = frozenset("""
    char short int long uchar ushort uint ulong half float double size_t ptrdiff_t intptr_t
    uintptr_t kernel global local private constant __kernel __global __local __private
    __constant read_only write_only read_write image2d_t image3d_t sampler_t event_t
    barrier get_global_id get_global_size get_local_id get_local_size get_group_id
    vload_half vstore_half vstore_half_rte as_uint as_float as_ulong as_double atomic_add
    atomic_min atomic_max atomic_cmpxchg atom_add atom_min atom_max atom_cmpxchg printf
    CLK_LOCAL_MEM_FENCE CLK_GLOBAL_MEM_FENCE select clamp mix step dot
""".split())
INDEX_MACRO = "HPVM_INDEX"
"""The macro naming the type buffer indices are flattened in (see the
module docstring)."""
_FLOAT_COMBINE = {"add": "old + v", "min": "fmin(old, v)", "max": "fmax(old, v)"}


class OpenCLRenderer(SharedSinCos, LaunchTests, NarrowIndices, MarchLanes, WorkItemSteps,
                     CStyleRenderer):
    """Renders node kernels and helpers as one OpenCL C program."""

    language = "OpenCL C"
    type_names = OPENCL_TYPES
    space_qualifiers = {"global": "__global", "local": "__local", "private": "__private"}
    entry_qualifier = "__kernel"
    index_type = INDEX_MACRO
    reserved_names = CStyleRenderer.reserved_names | OPENCL_RESERVED
    _scratch: frozenset[str] = frozenset()
    """Private buffers of the entry being rendered that get per-instance
    scratch copies."""

    def __init__(self, module, per_item: int = PER_ITEM, layout: str = "auto",
                 constant_division_in_double: bool = False, fast_math: bool = False,
                 lanes: int = LANES, narrow_indices: bool = True):
        super().__init__(module)
        self.constant_division_in_double = constant_division_in_double
        """f32 division by constants through double precision (see the
        module docstring); only where the device has cl_khr_fp64."""
        self.fast_math = fast_math
        """Built with -cl-fast-relaxed-math: float divisions and square
        roots are then approximate, with no slow path (steps.py)."""
        self.per_item = per_item
        """Instances a work item runs where a kernel allows it (1: one
        instance a work item)."""
        if layout not in LAYOUTS:
            raise TargetError(f"OpenCL C: unknown per_item layout '{layout}'",
                              f"use one of {', '.join(LAYOUTS)}")
        self.layout = layout
        """LAYOUTS: how a work item's instances lie (auto: per kernel)."""
        self.entry_per_item: dict[str, int] = {}
        """Entry name -> the instances a work item of it runs (its launch
        divides the stepped dimension by as much, device.py)."""
        self.entry_stepped: dict[str, int] = {}
        """Entry name -> the replication dimension a work item's instances
        step along: -1 the innermost, 0 where they march (steps.py)."""
        self.lanes = lanes
        """Adjacent instances of the innermost dimension a marching work
        item runs (lanes.py)."""
        self.narrow_indices = narrow_indices
        """Narrow i64 values computed in HPVM_INDEX (narrowing.py)."""
        self.entry_lanes: dict[str, int] = {}
        """Entry name -> the lanes of its work items (its launch divides
        the innermost dimension by as much)."""

    def work_item_shape(self, entry: str) -> dict[str, int]:
        """How the work items of a rendered ``entry`` run its instances:
        NodePlan's ``per_item``, ``stepped`` and ``lanes``."""
        return {"per_item": self.entry_per_item.get(entry, 1),
                "stepped": self.entry_stepped.get(entry, -1),
                "lanes": self.entry_lanes.get(entry, 1)}

    # -- types and spellings ---------------------------------------------
    def half_storage_type(self, space: str) -> str:
        return "half" if space == "global" else "float"

    def parameter_type(self, t: ScalarType) -> str:
        if self.in_entry and t.is_bool:
            return "uchar"  # kernels take no bool arguments
        return self.type_name(t)

    def math_function(self, name: str, t: ScalarType) -> str:
        return name  # overloaded for float and double

    def bitcast_text(self, text: str, source: ScalarType, target: ScalarType) -> str:
        if source == F16 or target == F16:  # f16 values live in float registers
            other = target if source == F16 else source
            raise TargetError(f"{self.language}: bitcast between f16 and {other} is not supported",
                              "bitcast f32 or f64 values")
        return f"as_{self.type_name(target)}({text})"

    def integer_abs(self, value: str, t: ScalarType) -> str:
        return f"(({self.type_name(t)})abs({value}))"

    def integer_min_max(self, name: str, a: str, b: str, t: ScalarType) -> str:
        return f"{name}({a}, {b})"

    def round_f16(self, text: str) -> str:
        self.require("hpvm_round_half", [
            "static inline float hpvm_round_half(float x) {",
            "    ushort bits;",
            "    vstore_half_rte(x, 0, (__private half*)&bits);",
            "    return vload_half(0, (__private const half*)&bits);",
            "}"])
        return f"hpvm_round_half({text})"

    def _expr_Binary(self, e: Binary) -> str:
        if self.constant_division_in_double and e.op == "div" and e.type == F32 \
                and isinstance(e.rhs, Const) and math.isfinite(e.rhs.value) and e.rhs.value \
                and exact_reciprocal(e.rhs, F32) is None:  # a power of two: a product
            divisor = float(np.float32(e.rhs.value))
            return f"{self._constant_division()}({self.expr(e.lhs)}, {divisor!r}, " \
                   f"{1.0 / divisor!r})"
        return super()._expr_Binary(e)

    def _constant_division(self) -> str:
        """The helper dividing an f32 by a constant in double precision."""
        self.features.add("fp64_division")
        self.require("hpvm_div_by_constant", [
            "static inline float hpvm_div_by_constant(float x, double c, double inverse) {",
            "    const double wide = (double)x;",
            "    const double q = wide * inverse;",
            "    const double r = fma(-q, c, wide);",
            "    return (float)((r == 0.0 || isnan(r)) ? q : fma(r, inverse, q));",
            "}"])
        return "hpvm_div_by_constant"

    def load_element(self, binding: BufferBinding, index: str) -> str:
        if binding.element.name == "f16" and binding.space == "global":
            return f"vload_half({index}, {binding.c_name})"
        return super().load_element(binding, index)

    def store_element(self, binding: BufferBinding, index: str, value: str) -> str:
        if binding.element.name == "f16" and binding.space == "global":
            return f"vstore_half_rte({value}, {index}, {binding.c_name});"
        return super().store_element(binding, index, value)

    def barrier(self) -> str:
        """A barrier orders local memory, as the IR's barrier promises;
        global memory too only in a kernel that reads a buffer it writes
        (instances may talk through it).  (Dropping the global fence
        elsewhere changed no timing measured on the H200.)"""
        fences = "CLK_LOCAL_MEM_FENCE"
        if self.function is not None and _talks_through_global_memory(self.function):
            fences += " | CLK_GLOBAL_MEM_FENCE"
        return f"barrier({fences});"

    def node_return(self) -> str:
        return "return;"

    def preamble(self) -> list[str]:
        lines = []
        if self.features & {"fp64", "fp64_division"}:
            lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        if "atomics64" in self.features:
            lines.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
            lines.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
        lines = lines or ["/* generated by hpvm-gpu-opencl */"]
        if self.index_type == INDEX_MACRO:
            lines += [f"#ifndef {INDEX_MACRO}", f"#define {INDEX_MACRO} long", "#endif"]
        return lines

    # -- atomics ------------------------------------------------------------
    def atomic_update(self, op: str, binding: BufferBinding, index: str, value: str,
                      t: ScalarType) -> str:
        pointer = f"&{binding.c_name}[{index}]"
        if binding.space == "private":
            return f"{self._private_update(op, t)}({pointer}, {value})"
        qualifier = self.space_qualifiers[binding.space]
        c_type = self.type_name(t)
        if t.is_int and t.bits in (32, 64):
            prefix = "atomic" if t.bits == 32 else "atom"
            if t.bits == 64:
                self.features.add("atomics64")
            return f"{prefix}_{op}((volatile {qualifier} {c_type}*){pointer}, {value})"
        if t.is_float and t.bits in (32, 64):
            return f"{self._float_atomic(op, t, binding.space)}({pointer}, {value})"
        raise TargetError(f"OpenCL C: atomic '{op}' on {t} elements (buffer '{binding.c_name}') "
                          "is not supported; use i32, u32, i64, u64, f32 or f64 elements")

    def _float_atomic(self, op: str, t: ScalarType, space: str) -> str:
        """A compare-and-swap loop on the bits of a float or double."""
        name = f"hpvm_atomic_{op}_{t.name}_{space}"
        c_type, bits = self.type_name(t), "uint" if t.bits == 32 else "ulong"
        swap = "atomic_cmpxchg" if t.bits == 32 else "atom_cmpxchg"
        if t.bits == 64:
            self.features.add("atomics64")
        q = self.space_qualifiers[space]
        self.require(name, [
            f"static inline {c_type} {name}(volatile {q} {c_type}* p, {c_type} v) {{",
            f"    {bits} expected = as_{bits}(*p);",
            "    for (;;) {",
            f"        {c_type} old = as_{c_type}(expected);",
            f"        {bits} seen = {swap}((volatile {q} {bits}*)p, expected, "
            f"as_{bits}(({c_type})({_FLOAT_COMBINE[op]})));",
            "        if (seen == expected) return old;",
            "        expected = seen;",
            "    }",
            "}"])
        return name

    def _private_update(self, op: str, t: ScalarType) -> str:
        """Private arrays need no atomicity: a plain read-modify-write."""
        name = f"hpvm_update_{op}_{t.name}"
        c_type = self.type_name(t)
        if t.is_float:
            combine = _FLOAT_COMBINE[op]
        elif op == "add":
            combine = f"({c_type})({self._as_unsigned('old', t)} + {self._as_unsigned('v', t)})"
        else:
            combine = f"{op}(old, v)"
        self.require(name, [
            f"static inline {c_type} {name}(__private {self.storage_type(t, 'private')}* p, "
            f"{c_type} v) {{",
            f"    {c_type} old = *p;",
            f"    *p = {combine};",
            "    return old;",
            "}"])
        return name

    # -- entries ------------------------------------------------------------
    def restricted(self, p) -> bool:
        """An entry's buffers are ``restrict`` wherever the runtime
        guarantees nothing else reaches them (hpvm.codegen.aliasing)."""
        return p.restrict or self.in_entry and aliases_nothing(p, self.function)

    def buffer_declarations(self, p, c_name: str, space: str, dims: list[str]) -> list[str]:
        if not (self.in_entry and p.name in self._scratch):
            return super().buffer_declarations(p, c_name, space, dims)
        storage = self.storage_type(p.type.element, "global")
        return ([f"__global const {storage}* hpvm_{c_name}_in"] + [f"long {d}" for d in dims]
                + [f"__global {storage}* hpvm_{c_name}_scratch"])

    def render_entry(self, kernel: KernelFunction, rank: int, name: str) -> None:
        self._scratch = set(written_private_buffers(kernel))
        self.narrow_entry(kernel)
        declarations = self.parameter_bindings(kernel, {})
        counts = [f"long {self.instance_count(d)}" for d in range(rank)]
        synchronous = synchronizes(self.module, kernel.name)
        per_item = self.entry_per_item[name] = self._per_item(kernel, rank, synchronous)
        layout = self.instance_layout(kernel, rank) if per_item > 1 else None
        self.entry_stepped[name] = 0 if layout == "march" else -1
        lanes = self.entry_lanes[name] = self.lanes if layout == "march" else 1
        strided = (0 if layout == "march" else rank - 1) if per_item > 1 else None
        unstrided = [d for d in range(rank) if d != strided and (lanes < 2 or d < rank - 1)]
        self.writer.open(f"__kernel void {name}({', '.join(declarations + counts)})")
        for d in range(DIMS):
            if d >= rank:
                self.writer.line(f"const long {self.instance_id(d)} = 0;")
                self.writer.line(f"const long {self.instance_count(d)} = 1;")
            elif d in unstrided:
                self.writer.line(f"const long {self.instance_id(d)} = "
                                 f"(long)get_global_id({rank - 1 - d});")
        self.declare_local_arrays(kernel)
        outside = [f"{self.instance_id(d)} >= {self.instance_count(d)}" for d in unstrided]
        if lanes > 1:
            outside.append(self._lanes_prologue(rank, lanes))
        if not synchronous and outside:
            self.writer.line(f"if ({' || '.join(outside)}) return;")
        self.define_shape_symbols(kernel)
        self._copy_private_buffers(kernel)
        if strided is None:
            self.body(kernel.body)
        elif layout == "strided":
            self._strided_steps(kernel, strided, per_item)
        elif layout == "march":
            self._march_steps(kernel, rank, per_item, lanes)
        else:
            self._contiguous_steps(kernel, strided, per_item)
        self.writer.close()
        self._scratch = set()
        self.end_narrow_entry()

    def _copy_private_buffers(self, kernel: KernelFunction) -> None:
        """Each instance works on its own slice of the scratch buffer."""
        if not self._scratch:
            return
        ids = [self.instance_id(d) for d in range(DIMS)]
        counts = [self.instance_count(d) for d in range(DIMS)]
        self.writer.line(f"const long hpvm_linear = ({ids[0]} * {counts[1]} + {ids[1]}) * "
                         f"{counts[2]} + {ids[2]};")
        for p in kernel.params:
            if p.name not in self._scratch:
                continue
            binding = self.buffer(p.name)
            storage = self.storage_type(p.type.element, "global")
            copied = "ushort" if storage == "half" else storage
            c = binding.c_name
            self.writer.line(f"__global {storage}* {c} = hpvm_{c}_scratch + hpvm_linear * "
                             f"({binding.length()});")
            self.writer.line(f"for (long hpvm_i = 0; hpvm_i < {binding.length()}; hpvm_i++) "
                             f"((__global {copied}*){c})[hpvm_i] = "
                             f"((__global const {copied}*)hpvm_{c}_in)[hpvm_i];")

    def declare_local_arrays(self, kernel: KernelFunction) -> None:
        if self.local_arrays(kernel):
            self.writer.line("const long hpvm_lid = ((long)get_local_id(2) * (long)get_local_size(1)"
                             " + (long)get_local_id(1)) * (long)get_local_size(0)"
                             " + (long)get_local_id(0);")
            self.writer.line("const long hpvm_lsize = (long)(get_local_size(0) * "
                             "get_local_size(1) * get_local_size(2));")
        super().declare_local_arrays(kernel)

    def zero_local_array(self, c_name: str, size: int) -> None:
        self.writer.line(f"for (long hpvm_i = hpvm_lid; hpvm_i < {size}; hpvm_i += hpvm_lsize) "
                         f"{c_name}[hpvm_i] = 0;")

    def synchronize_local_arrays(self, kernel: KernelFunction) -> None:
        self.writer.line("barrier(CLK_LOCAL_MEM_FENCE);")


def _talks_through_global_memory(function: KernelFunction) -> bool:
    """Whether ``function`` loads a buffer parameter it also writes (a
    helper called with a buffer counts as writing it)."""
    buffers = {p.name for p in function.params if p.is_buffer}
    written = {n.buffer for n in walk(function.body) if isinstance(n, (Store, AtomicUpdate))}
    written |= {a.name for n in walk(function.body) if isinstance(n, Call)
                for a in n.args if isinstance(a, Var)}
    read = {n.buffer for n in walk(function.body) if isinstance(n, Load)}
    return bool(buffers & written & (read | {n.buffer for n in walk(function.body)
                                            if isinstance(n, AtomicUpdate)}))
