"""Lanes of a march: a marching work item (steps.py) also runs ``lanes``
adjacent instances of the innermost dimension, and reads what they share
as vectors (a mixin of OpenCLRenderer, with WorkItemSteps).

A stencil's loads sit under its interior test, which the innermost
instance id decides, so the device compiler does not merge adjacent
instances' loads (steps.py: adjacent instances lose there).  Lanes
if-convert the loads, not the arithmetic.  Every read of a buffer the
kernel does not write, at the instance's own element shifted by
constants (``A[z + 1, y - 1, x]``), becomes a speculated load: made for
all lanes at once, before their bodies, as one vector, with no branch
(indices clamped into the buffer: a lane uses the element only where its
own code reads it, in bounds, where the clamp changes nothing).  Each
lane's body then reads its component; a shift along the innermost
dimension reads the neighbouring lane's component where it lies inside
the vector (``x + 1`` of lane 0), else loads as written.  Reads shifted
along the outermost dimension only (the march's columns) are loaded once
for the whole run, the others once a step.  A buffer the body only
writes, at its own element, with a store outside any branch, is written
once a step for all lanes.  Each lane's body stays scalar, branches and
all; lanes past the replication do not run, and where a row ends inside
a work item's lanes they store one element at a time.

A vector is one access where its address is aligned to the vector, else
``vloadW``/``vstoreW``: NVIDIA's compiler splits those into an access an
element, since it cannot know the alignment (rows of odd length).

The suite's stencil on the lent H200 (benchmarks/bandwidth_bench.py,
per_item 4, against a float4 copy kernel): lanes 1 / 2 / 4 / 4 with
``vloadW`` only: 0.61 / 0.57 / **0.71** / 0.60 (hand-written marches
reached 0.76 at best; benchmarks/RESULTS.md).  With the clamps and row-end
tests in ``HPVM_INDEX`` (int in an int launch: narrowing.py), lanes 2 /
4: 0.69-0.70 / **0.75-0.76**.
"""
from __future__ import annotations

from dataclasses import dataclass

from hpvm.ir.instance_access import instance_aliases
from hpvm.ir.kernel import Call, KernelFunction, Load, Store, Var
from hpvm.ir.visit import walk

from .steps import MAX_COLUMN_SPAN, own_shifts, read_only_buffers

LANES = 4
"""Adjacent instances of the innermost dimension a marching work item runs
where no option chose (see the module docstring)."""
LANE_CHOICES = (1, 2, 4, 8)
VECTOR_ELEMENTS = frozenset({"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"})
"""Element types OpenCL C has vectors of (f16 moves through vload_half,
bool as bytes compared to 0: neither is read as a vector)."""


@dataclass(frozen=True)
class LanePlan:
    """What the lanes of one marching kernel read and write as vectors."""

    width: int
    columns: dict[str, tuple[int, int]]
    """Buffer -> the lowest and highest shift along the outermost dimension
    of its reads at the own element otherwise: a vector each, loaded once
    for the whole run."""
    rows: dict[str, tuple[tuple[int, ...], ...]]
    """Buffer -> the shifts of every dimension but the innermost of its
    other vectors, loaded once a step."""
    sinks: tuple[str, ...]
    """Buffers written once a step, a vector for all lanes."""


def lane_plan(kernel: KernelFunction, rank: int, width: int) -> LanePlan:
    """The vectors of ``kernel``'s lanes (see the module docstring)."""
    aliases = instance_aliases(kernel.body)
    elements = {p.name: p.type.element.name for p in kernel.params if p.is_buffer}
    readable = {name for name in read_only_buffers(kernel)
                if elements[name] in VECTOR_ELEMENTS}
    vectors: dict[str, set[tuple[int, ...]]] = {}
    for node in walk(kernel.body):
        if isinstance(node, Load) and node.buffer in readable:
            shifts = own_shifts(node, aliases, rank)
            if shifts is not None and abs(shifts[-1]) < width:
                vectors.setdefault(node.buffer, set()).add(shifts[:-1])
    columns, rows = {}, {}
    for name, outer in vectors.items():
        along = {shifts[0] for shifts in outer if not any(shifts[1:])}
        if len(along) > 1 and max(along) - min(along) <= MAX_COLUMN_SPAN:
            columns[name] = (min(along), max(along))
            outer = {shifts for shifts in outer if any(shifts[1:])}
        if outer:
            rows[name] = tuple(sorted(outer))
    sinks = tuple(name for name, element in elements.items()
                  if element in VECTOR_ELEMENTS and _sinkable(kernel, name, aliases, rank))
    return LanePlan(width, columns, rows, sinks)


def _sinkable(kernel: KernelFunction, name: str, aliases: dict[str, int], rank: int) -> bool:
    """Whether ``kernel`` only stores to ``name``, each time at the
    instance's own element, and once outside any branch or loop (so every
    lane writes its element once a step, whatever its branches do)."""
    own = (0,) * rank
    for node in walk(kernel.body):
        if isinstance(node, Load) and node.buffer == name or isinstance(node, Call) and any(
                isinstance(a, Var) and a.name == name for a in node.args):
            return False
        if isinstance(node, Store) and node.buffer == name \
                and own_shifts(node, aliases, rank) != own:
            return False
    return any(isinstance(s, Store) and s.buffer == name for s in kernel.body)


class MarchLanes:
    """The lanes of a marching entry; the renderer supplies ``writer``,
    ``body``, ``buffer``, ``instance_id``, ``instance_count``, ``lanes``
    and WorkItemSteps' ``_unrolled_steps`` and ``_column_registers``."""

    _lane_plan: LanePlan | None = None
    _lane = 0
    """The lane whose body is being rendered."""

    def _lanes_prologue(self, rank: int, width: int) -> str:
        """Declares the first lane's instance of the innermost dimension;
        returns the C test of a work item with no lane inside."""
        self.writer.line(f"const long hpvm_lane0 = (long)get_global_id(0) * {width};")
        return f"hpvm_lane0 >= {self.instance_count(rank - 1)}"

    def _march_lanes(self, kernel: KernelFunction, rank: int, per_item: int, width: int) -> None:
        """The steps of a march whose work items run ``width`` lanes."""
        plan = self._lane_plan = lane_plan(kernel, rank, width)
        self._aliases = instance_aliases(kernel.body)
        for name, (low, high) in plan.columns.items():
            self._lane_column(name, low, per_item + high - low, rank)
        self._unrolled_steps(kernel, 0, per_item, "hpvm_first + hpvm_step",
                             step=lambda: self._lane_step(kernel, rank))
        self._lane_plan = None

    def _vector_type(self, binding) -> str:
        return f"{self.type_name(binding.element)}{self._lane_plan.width}"

    def _outer_ids(self, rank: int) -> list[str]:
        return [self.instance_id(d) for d in range(rank - 1)]

    def _lane_column(self, name: str, low: int, length: int, rank: int) -> None:
        """``hpvm_column_<buffer>[j]`` = the lanes' elements of
        buffer[hpvm_first + low + j, own ids...]."""
        binding = self.buffer(name)
        outer = ["hpvm_at", *self._outer_ids(rank)[1:]]
        self._column_registers(binding, self._vector_type(binding), low, length,
                               self._vector_load(binding, outer))

    def _vector_load(self, binding, outer: list[str]) -> str:
        """The lanes' elements of ``binding`` at the outer indices
        ``outer`` (C expressions) as one vector, with no branch: every
        index clamped into the buffer (a lane uses an element only where
        its own code reads it, in bounds, where the clamp changes nothing),
        the lanes past a row's end reading its last element, an empty
        buffer (never read) giving 0."""
        width, vector = self._lane_plan.width, self._vector_type(binding)
        # in HPVM_INDEX: every size of an int launch is at most NARROW_SIZE
        # (narrowing.py), so an index clamped into a dimension, the first
        # lane (below the count) and its neighbours fit; a column's row of
        # an undivided march may not, but is clamped and never used
        cast = self.index_cast
        dims = [f"{cast}{d}" for d in binding.dims]
        lane, last = f"{cast}hpvm_lane0", dims[-1]
        outer = [f"clamp({cast}({i}), {cast}0, {d} - 1)" for i, d in zip(outer, dims)]
        index = binding.flat_index([*outer, lane], cast)
        ends = [f"min({lane} + {w}, {last} - 1)" for w in range(width)]
        elements = ", ".join(f"{binding.c_name}[{binding.flat_index([*outer, end], cast)}]"
                             for end in ends)
        nonempty = " && ".join(f"{d} > 0" for d in binding.dims)
        return (f"({nonempty}) ? ({lane} + {width} <= {last} ? {self._vector_helper(binding)}"
                f"({binding.c_name} + ({index})) : ({vector})({elements})) "
                f": ({vector})({self.literal(0, binding.element)})")

    def _vector_helper(self, binding, store: bool = False) -> str:
        """The name of a helper that loads (or stores) a vector of
        ``binding``'s elements at a pointer: one vector access where the
        pointer is aligned to the vector, else ``vloadW``/``vstoreW``, which
        NVIDIA's compiler splits into an access an element (it cannot
        know the alignment: rows of an odd length)."""
        width, scalar = self._lane_plan.width, self.type_name(binding.element)
        vector, mask = f"{scalar}{width}", width * binding.element.itemsize - 1
        name = f"hpvm_{'store' if store else 'load'}_{vector}"
        if store:
            self.require(name, [
                f"static inline void {name}({vector} v, __global {scalar}* p) {{",
                f"    if (((ulong)p & {mask}) == 0) *(__global {vector}*)p = v;",
                f"    else vstore{width}(v, 0, p);",
                "}"])
        else:
            self.require(name, [
                f"static inline {vector} {name}(const __global {scalar}* p) {{",
                f"    return ((ulong)p & {mask}) == 0 ? *(const __global {vector}*)p "
                f": vload{width}(0, p);",
                "}"])
        return name

    def _lane_step(self, kernel: KernelFunction, rank: int) -> None:
        """One step: its row vectors, each lane's body, the sunk stores."""
        plan = self._lane_plan
        ids = self._outer_ids(rank)
        for name, shifted in plan.rows.items():
            binding = self.buffer(name)
            for k, shifts in enumerate(shifted):
                outer = [_shifted(i, s) for i, s in zip(ids, shifts)]
                vector = self._vector_load(binding, outer)
                self.writer.line(f"const {self._vector_type(binding)} "
                                 f"hpvm_row_{binding.c_name}_{k} = {vector};")
        for name in plan.sinks:
            binding = self.buffer(name)
            self.writer.line(f"{self._vector_type(binding)} hpvm_sink_{binding.c_name};")
        inner, count = self.instance_id(rank - 1), self.instance_count(rank - 1)
        for lane in range(plan.width):
            self._lane = lane
            self.writer.open("")
            self.writer.line(f"const long {inner} = hpvm_lane0 + {lane};")
            self.writer.open(f"if ({inner} < {count})")
            self.body(kernel.body)
            self.writer.close()
            self.writer.close()
        self._lane = 0
        for name in plan.sinks:
            self._sink_store(self.buffer(name), ids, count)

    def _sink_store(self, binding, ids: list[str], count: str) -> None:
        width, sink = self._lane_plan.width, f"hpvm_sink_{binding.c_name}"
        index = binding.flat_index([*ids, "hpvm_lane0"], self.index_cast)
        self.writer.open(f"if (hpvm_lane0 + {width} <= {count})")
        self.writer.line(f"{self._vector_helper(binding, store=True)}({sink}, "
                         f"{binding.c_name} + ({index}));")
        self.writer.close()
        self.writer.open("else")
        self.writer.line(f"{binding.c_name}[{index}] = {sink}.s0;")
        for w in range(1, width):
            self.writer.line(f"if (hpvm_lane0 + {w} < {count}) "
                             f"{binding.c_name}[({index}) + {w}] = {sink}.s{w:x};")
        self.writer.close()

    def _lane_register(self, load: Load) -> str | None:
        """The vector component a lane reads ``load`` from, or None."""
        plan = self._lane_plan
        shifts = own_shifts(load, self._aliases, len(load.indices))
        if shifts is None or load.buffer not in plan.columns and load.buffer not in plan.rows:
            return None
        lane = self._lane + shifts[-1]
        if not 0 <= lane < plan.width:
            return None
        c_name = self.buffer(load.buffer).c_name
        outer = shifts[:-1]
        low, high = plan.columns.get(load.buffer, (1, 0))
        if not any(outer[1:]) and low <= outer[0] <= high:
            return f"hpvm_column_{c_name}[hpvm_step + {outer[0] - low}].s{lane:x}"
        if outer in plan.rows.get(load.buffer, ()):
            return f"hpvm_row_{c_name}_{plan.rows[load.buffer].index(outer)}.s{lane:x}"
        return None

    def _expr_Load(self, e: Load) -> str:
        if self._lane_plan is not None:
            register = self._lane_register(e)
            if register is not None:
                return register
        return super()._expr_Load(e)

    def _stmt_Store(self, s: Store) -> None:
        if self._lane_plan is None or s.buffer not in self._lane_plan.sinks:
            super()._stmt_Store(s)
            return
        binding = self.buffer(s.buffer)
        self.writer.line(f"hpvm_sink_{binding.c_name}.s{self._lane:x} = "
                         f"{self.converted(s.value, binding.element)};")


def _shifted(text: str, shift: int) -> str:
    if not shift:
        return text
    return f"({text} {'+' if shift > 0 else '-'} {abs(shift)}L)"
