"""Work items running several instances each: the steps of an OpenCL
entry (a mixin of OpenCLRenderer).

A kernel that does not synchronise its work group, keeps no per-instance
scratch copies and does not return early lets each work item run PER_ITEM
instances of the innermost dimension: each work item then has several
loads in flight, which a GPU needs to reach its memory bandwidth.  Its
buffers are ``restrict`` where no other can reach them
(hpvm.codegen.aliasing), so that the compiler may issue the loads of later
steps before the stores of earlier ones.  The launch divides the work
items only where enough are left to fill the device
(``OpenCLDevice.work_items``); the instances past the replication stop
the loop.  Three layouts of a work item's instances (LAYOUTS):

- *contiguous*: adjacent instances, all of them in one unrolled run
  without bounds checks where the work item's run lies inside the
  replication (a second copy of the body, with checks, takes the tail):
  the device compiler then merges the steps' accesses of adjacent
  elements into vector accesses.
- *strided*: instances a launch's width apart (each step's work items
  still touch consecutive elements).  Where the innermost instance id
  decides a branch (the stencil's interior test) the steps' accesses are
  not merged, and adjacent instances a work item spread each warp's load
  over per_item times the cache lines.
- *march*: adjacent instances of the outermost dimension (the launch
  divides that one; the inner ones keep a work item each, coalesced),
  where the kernel reads a buffer it does not write at two or more
  shifts of its own element along that dimension (:func:`columns`: a
  stencil's planes): each element of that column is loaded once, before
  the steps, into registers the steps share, instead of once per
  neighbour that reads it.  Each work item also runs ``lanes`` adjacent
  instances of the innermost dimension, their shared reads loaded as
  vectors (lanes.py).

On the lent H200, each kernel's bandwidth against a float4 copy kernel's
on its own time (benchmarks/bandwidth_bench.py, per_item 4), strided ->
contiguous: a map over 64M floats 0.75 -> 0.96, blur 8192^2 rows 0.62 ->
0.89, columns 0.65 -> 0.79 (0.86 in launch.py's default groups of rows);
the stencil's sweeps 0.59 -> 0.35.  (Per_item 8 contiguous ran slower
than 4 on every kernel: two vectors a step, each warp's access spanning
twice the lines.)

The default (``auto``) is contiguous unless the innermost instance id
reaches an ``if``'s condition or a loop's bounds (hpvm.ir.uniformity);
there it marches where the kernel has columns, else strides.  It also
strides where something else keeps the device compiler from merging the
steps' accesses: accesses inside a loop (camera's channel loops), a
correctly rounded division or square root (their slow paths branch), a
buffer updated in place (no ``restrict``).  On the H200, against
contiguous: camera's kernels 1.2-2.2x, srad's 1.4-3.5x, edge's magnitude
and threshold 1.5-2.2x faster; the map, blur and edge's stencils stay
contiguous.  A strided launch that is not divided runs one instance a
work item with no steps (sgemm as written 0.144 -> 0.112 ms, backprop's
partial sums 1.59 -> 0.68 ms).  The
stencil's sweep as generated (per_item 4, bandwidth_bench.py): strided
0.59, march 0.61-0.62 of the copy kernel, 0.71 with four lanes (one
float a work item is what caps a scalar copy kernel of the stencil's
size at 0.61 of the float4 copy; hand-written marches reached 0.76 at
best: benchmarks/RESULTS.md).
"""
from __future__ import annotations

from hpvm.codegen.aliasing import aliases_nothing
from hpvm.ir.instance_access import instance_aliases, instance_dimension
from hpvm.ir.kernel import (
    Binary, Call, Const, Expr, For, If, Intrinsic, KernelFunction, Load, Return, Store, Var,
    While,
)
from hpvm.ir.uniformity import Uniformity, written_buffers
from hpvm.ir.visit import walk

PER_ITEM = 4
"""Instances one work item runs, in a kernel that does not synchronise its
work group (see the module docstring)."""
LAYOUTS = ("auto", "contiguous", "strided", "march")
"""How a work item's instances lie (see the module docstring)."""


class WorkItemSteps:
    """The per-item steps of an entry; the renderer supplies ``writer``,
    ``body``, ``instance_id``, ``instance_count``, ``per_item``, ``layout``
    and ``_scratch``."""

    _columns: dict[str, int] = {}
    """While a marching entry's body renders: buffer -> the lowest offset
    of its column registers."""
    _aliases: dict[str, int] = {}

    def instance_layout(self, kernel: KernelFunction, rank: int) -> str:
        """The layout of a work item's instances of ``kernel`` (LAYOUTS; the
        module docstring says why ``auto`` decides so)."""
        if self.layout == "march" and rank < 2:
            return "contiguous"  # the outermost dimension is the innermost
        if self.layout != "auto":
            return self.layout
        innermost = Uniformity(kernel, (rank - 1,))
        for stmt in walk(kernel.body):
            tests = (stmt.cond,) if isinstance(stmt, (If, While)) else \
                (stmt.start, stmt.stop) if isinstance(stmt, For) else ()
            if any(innermost.is_varying(test) for test in tests):
                return "march" if columns(kernel, rank) else "strided"
        if any(_steps_access_in_loop(loop, innermost) for loop in walk(kernel.body)
               if isinstance(loop, (For, While))) \
                or not self.fast_math and _slow_path(kernel.body, innermost) \
                or _unrestricted(kernel):
            return "strided"
        return "contiguous"

    def _steps_prologue(self) -> None:
        self.writer.line("const long hpvm_first = (long)get_global_id(0);")
        self.writer.line("const long hpvm_stride = (long)get_global_size(0);")

    def _unrolled_steps(self, kernel: KernelFunction, dim: int, per_item: int, instance: str,
                        checked: bool = True, step=None) -> None:
        """``per_item`` steps, unrolled, each the body for the instance
        ``instance`` of dimension ``dim`` (a C expression of
        ``hpvm_step``), or what ``step()`` renders; ``checked``: the steps
        past the replication stop."""
        item = self.instance_id(dim)
        self.writer.line("#pragma unroll")
        self.writer.open(f"for (int hpvm_step = 0; hpvm_step < {per_item}; hpvm_step++)")
        self.writer.line(f"const long {item} = {instance};")
        if checked:
            self.writer.line(f"if ({item} >= {self.instance_count(dim)}) break;")
        if step is None:
            self.body(kernel.body)
        else:
            step()
        self.writer.close()

    def _strided_steps(self, kernel: KernelFunction, dim: int, per_item: int) -> None:
        """Instances ``hpvm_first + step * launch width``; one instance a
        work item, with no steps, where the launch was not divided (a body
        inside unrolled steps ran its loops 1.25-1.9x slower on the H200:
        sgemm as written, backprop's partial sums)."""
        item, count = self.instance_id(dim), self.instance_count(dim)
        self._steps_prologue()
        self.writer.open(f"if (hpvm_stride >= {count})")
        self.writer.line(f"const long {item} = hpvm_first;")
        self.writer.open(f"if ({item} < {count})")
        self.body(kernel.body)
        self.writer.close()
        self.writer.close()
        self.writer.open("else")
        self._unrolled_steps(kernel, dim, per_item, "hpvm_first + hpvm_step * hpvm_stride")
        self.writer.close()

    def _contiguous_steps(self, kernel: KernelFunction, dim: int, per_item: int) -> None:
        """Instances ``hpvm_first * per_item + step``, unrolled without
        checks where they all lie inside the replication (the index then a
        visible multiple of ``per_item`` plus a constant: what lets the
        device compiler merge the steps' accesses); one instance a work
        item where the launch was not divided (its width then covers the
        replication)."""
        item, count = self.instance_id(dim), self.instance_count(dim)
        self._steps_prologue()
        self.writer.open(f"if (hpvm_stride < {count} && hpvm_first * {per_item} + {per_item} "
                         f"<= {count})")
        self._unrolled_steps(kernel, dim, per_item, f"hpvm_first * {per_item} + hpvm_step",
                             checked=False)
        self.writer.close()
        self.writer.open("else")
        self.writer.line(f"const long hpvm_run = hpvm_stride < {count} ? {per_item} : 1;")
        self.writer.open("for (long hpvm_step = 0; hpvm_step < hpvm_run; hpvm_step++)")
        self.writer.line(f"const long {item} = hpvm_first * hpvm_run + hpvm_step;")
        self.writer.line(f"if ({item} >= {count}) break;")
        self.body(kernel.body)
        self.writer.close()
        self.writer.close()

    def _per_item(self, kernel: KernelFunction, rank: int, synchronous: bool) -> int:
        """How many instances a work item of ``kernel``'s entry runs:
        ``per_item`` where the kernel is replicated and neither
        synchronises its group (``synchronous``), keeps per-instance
        scratch copies nor returns early (its instances are then
        independent straight-line runs of the body), else one."""
        if self.per_item < 2 or not rank or self._scratch or synchronous \
                or any(isinstance(n, Return) for n in walk(kernel.body)):
            return 1
        return self.per_item

    def _march_steps(self, kernel: KernelFunction, rank: int, per_item: int,
                     lanes: int) -> None:
        """Instances ``hpvm_first + step`` of the outermost dimension (the
        launch divides it), each column load (:func:`columns`) read once
        for the whole run into registers before the steps; with ``lanes``
        adjacent instances of the innermost dimension each (lanes.py)."""
        self.writer.line(f"const long hpvm_first = (long)get_global_id({rank - 1}) * {per_item};")
        if lanes > 1:
            self._march_lanes(kernel, rank, per_item, lanes)
            return
        marching = columns(kernel, rank)
        for name, (low, high) in marching.items():
            self._load_column(name, low, per_item + high - low, rank)
        self._columns = {name: low for name, (low, _) in marching.items()}
        self._aliases = instance_aliases(kernel.body)
        self._unrolled_steps(kernel, 0, per_item, "hpvm_first + hpvm_step")
        self._columns = {}

    def _load_column(self, name: str, low: int, length: int, rank: int) -> None:
        """``hpvm_column_<buffer>[j]`` = buffer[hpvm_first + low + j, own
        ids...] for j < ``length``, 0 where that is outside the buffer."""
        binding = self.buffer(name)
        own = [self.instance_id(d) for d in range(1, rank)]
        inside = " && ".join(["hpvm_at >= 0", f"hpvm_at < {binding.dims[0]}"]
                             + [f"{i} < {d}" for i, d in zip(own, binding.dims[1:])])
        index = binding.flat_index(["hpvm_at", *own], self.index_cast)
        self._column_registers(binding, self.type_name(binding.element), low, length,
                               f"({inside}) ? {self.load_element(binding, index)} "
                               f": {self.literal(0, binding.element)}")

    def _column_registers(self, binding, c_type: str, low: int, length: int,
                          value: str) -> None:
        """``hpvm_column_<buffer>[j]`` (of ``c_type``) = ``value``, a C
        expression of ``hpvm_at`` = hpvm_first + low + j, for j < ``length``
        (unrolled: the registers of a march's column)."""
        register = f"hpvm_column_{binding.c_name}"
        self.writer.line(f"{c_type} {register}[{length}];")
        self.writer.line("#pragma unroll")
        self.writer.open(f"for (int hpvm_j = 0; hpvm_j < {length}; hpvm_j++)")
        shift = f"- {-low}L" if low < 0 else f"+ {low}L"
        self.writer.line(f"const long hpvm_at = hpvm_first + hpvm_j {shift};")
        self.writer.line(f"{register}[hpvm_j] = {value};")
        self.writer.close()

    def _expr_Load(self, e: Load) -> str:
        low = self._columns.get(e.buffer)
        offset = None if low is None else column_offset(e, self._aliases, len(e.indices))
        if offset is None:
            return super()._expr_Load(e)
        return f"hpvm_column_{self.buffer(e.buffer).c_name}[hpvm_step + {offset - low}]"


MAX_COLUMN_SPAN = 8
"""The widest range of offsets along the outermost dimension whose loads a
marching work item keeps in registers."""


def _shift(index: Expr, aliases: dict[str, int], dim: int) -> int | None:
    """c where ``index`` is the instance id of ``dim`` plus the constant c."""
    if instance_dimension(index, aliases) == dim:
        return 0
    if not (isinstance(index, Binary) and index.op in ("add", "sub")):
        return None
    if instance_dimension(index.lhs, aliases) == dim and isinstance(index.rhs, Const):
        return int(index.rhs.value) * (1 if index.op == "add" else -1)
    if index.op == "add" and isinstance(index.lhs, Const) \
            and instance_dimension(index.rhs, aliases) == dim:
        return int(index.lhs.value)
    return None


def own_shifts(access: Load | Store, aliases: dict[str, int],
               rank: int) -> tuple[int, ...] | None:
    """(c0, ..., c(rank-1)) where ``access`` is at ``buffer[id0 + c0, ...,
    id(rank-1) + c(rank-1)]``: the instance's own element shifted by
    constants."""
    if len(access.indices) != rank:
        return None
    shifts = tuple(_shift(index, aliases, d) for d, index in enumerate(access.indices))
    return None if None in shifts else shifts


def column_offset(load: Load, aliases: dict[str, int], rank: int) -> int | None:
    """c where ``load`` reads ``buffer[id0 + c, id1, ..., id(rank-1)]``: the
    instance's own element shifted along the outermost dimension."""
    shifts = own_shifts(load, aliases, rank)
    return shifts[0] if shifts is not None and not any(shifts[1:]) else None


def read_only_buffers(kernel: KernelFunction) -> set[str]:
    """The buffers ``kernel`` neither writes nor passes to a helper (which
    might), bool ones aside (read as bytes compared to 0)."""
    changed = written_buffers(kernel.body) | {
        a.name for n in walk(kernel.body) if isinstance(n, Call) for a in n.args
        if isinstance(a, Var)}
    return {p.name for p in kernel.params
            if p.is_buffer and p.name not in changed and not p.type.element.is_bool}


def columns(kernel: KernelFunction, rank: int) -> dict[str, tuple[int, int]]:
    """Buffers ``kernel`` only reads, at two or more offsets along the
    outermost dimension (:func:`column_offset`; a stencil's planes):
    name -> (lowest, highest offset).  Consecutive instances along that
    dimension read each other's: a work item running several of them reads
    each element once."""
    if rank < 2:
        return {}
    aliases = instance_aliases(kernel.body)
    readable = read_only_buffers(kernel)
    offsets: dict[str, set[int]] = {}
    for node in walk(kernel.body):
        if isinstance(node, Load) and node.buffer in readable:
            offset = column_offset(node, aliases, rank)
            if offset is not None:
                offsets.setdefault(node.buffer, set()).add(offset)
    return {name: (min(found), max(found)) for name, found in offsets.items()
            if len(found) > 1 and max(found) - min(found) <= MAX_COLUMN_SPAN}


def _steps_access_in_loop(loop: For | While, innermost: Uniformity) -> bool:
    """Whether ``loop``'s body loads or stores an element whose index
    follows the innermost instance id, or passes that id to a helper:
    adjacent instances' accesses then sit in one loop per step, which the
    device compiler does not merge across steps (camera's channel loops
    ran 2x slower contiguous than strided on the H200)."""
    return any(isinstance(node, (Load, Store))
               and any(innermost.is_varying(i) for i in node.indices)
               or isinstance(node, Call) and any(innermost.is_varying(a) for a in node.args)
               for node in walk(loop.body))


def _slow_path(body, innermost: Uniformity) -> bool:
    """Whether ``body`` divides floats (by other than a constant) or takes
    a float's square root where the value follows the innermost instance
    id: correctly rounded (hpvm's default), each has a slow path whose
    branches keep the steps' accesses apart (srad's and edge's divisions
    and square roots ran 1.5-3.5x slower contiguous than strided on the
    H200).  Divisions by constants are exact without one (renderer.py)."""
    for node in walk(body):
        if isinstance(node, Binary) and node.op == "div" and node.type.is_float \
                and innermost.is_varying(node) and not isinstance(node.rhs, Const):
            return True
        if isinstance(node, Intrinsic) and node.name == "sqrt" and node.type.is_float \
                and innermost.is_varying(node.args[0]):
            return True
    return False


def _unrestricted(kernel: KernelFunction) -> bool:
    """Whether a buffer of ``kernel`` is rendered without ``restrict``
    (hpvm.codegen.aliasing: any buffer it updates in place, and then its
    inputs too): the device compiler then keeps each step's loads after
    the earlier steps' stores (srad's update of J ran 1.4x slower
    contiguous than strided on the H200)."""
    return any(p.is_buffer and not aliases_nothing(p, kernel) for p in kernel.params)
