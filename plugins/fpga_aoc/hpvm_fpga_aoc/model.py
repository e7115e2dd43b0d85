"""The performance and area model of one single-work-item kernel
(HPVM2FPGA's Eq. 1-4; Eq. 5-6 are in estimate.py).

A kernel is a sequence of *segments*: straight-line code, scheduled as soon
as its operands are ready (its latency is the critical path), and loops,
which run one after another.  For a loop with trip count TC, unroll factor
U (``unroll`` hint; complete when U >= TC), pipeline depth LAT (the body's
critical path) and initiation interval II:

- Eq. 1, a pipelined loop (no loop left in its body):
  ``C = (ceil(TC / U) - 1) * II + LAT``
- Eq. 2, a loop around loops (the inner loops serialise it):
  ``C = ceil(TC / U) * LAT``, where LAT counts the inner loops' C (Eq. 3)
- a completely unrolled loop is straight-line code: ``LAT + (TC - 1) * R``
- Eq. 4, the kernel: the sum of its segments.

``II = max(1, U * R, ceil(U * B / W))`` where R is the longest recurrence
(a value carried to the next iteration through a register, or through a
buffer that is both read and written unless the loop is ``ivdep`` or each
iteration touches only its own element), B the bytes of global memory one
iteration moves and W the bytes per cycle the board's memory delivers
(port contention; copies of a loop made by unrolling a loop around
it share W).  Area is the sum of the operators', times U for
unrolled bodies, plus one loop controller per loop and the arrays (in
registers up to 256 bytes, else M20K blocks, one copy per pair of access
sites).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from hpvm.errors import TargetError
from hpvm.ir import kernel as k
from hpvm.ir.graph import Module
from hpvm.ir.types import BufferType
from hpvm.ir.visit import walk

from hpvm.ir.reduction import folded_value

from .expressions import evaluate, operands, operator_name, unrolled
from .profiles import DeviceProfile, Resources

NEVER = float("-inf")
REGISTER_ARRAY_BYTES = 256
M20K_BITS = 20 * 1024


@dataclass
class LoopReport:
    """What the model found for one loop."""

    loop: str
    trip_count: int
    unroll: int
    ii: int
    latency: int
    cycles: int
    form: str
    """'pipelined', 'serial' (loops inside) or 'unrolled' (completely)."""
    limiter: str
    """What sets II: 'none', 'recurrence through X', 'memory bandwidth'."""


@dataclass
class KernelReport:
    function: str
    cycles: int
    resources: Resources
    loops: list[LoopReport] = field(default_factory=list)


def kernel_report(module: Module, function: str, symbols: dict[str, int],
                  profile: DeviceProfile, bytes_per_cycle: float,
                  measured: dict | None = None) -> KernelReport:
    """The model of node kernel ``function`` run with ``symbols`` (its
    scope's shape symbols and integer scalars).  ``measured``: loop id ->
    (pipelined, II) that aoc's report gives, used instead of the model's."""
    model = _KernelModel(module, profile, bytes_per_cycle)
    model.measured = measured or {}
    kernel = module.function(function)
    model.spaces = {p.name: "global" for p in kernel.params if isinstance(p.type, BufferType)}
    env = dict(symbols)
    cycles, area = model.block(kernel.body, env, function)
    return KernelReport(function, math.ceil(cycles), area, model.loops)


class _KernelModel:
    def __init__(self, module: Module, profile: DeviceProfile, bytes_per_cycle: float):
        self.module = module
        self.profile = profile
        self.bytes_per_cycle = bytes_per_cycle
        self.loops: list[LoopReport] = []
        self.spaces: dict[str, str] = {}
        self.arrays: dict[str, k.ArrayDecl] = {}
        self.copies = 1
        self.measured: dict = {}
        self.zeroed: set[str] = set()
        """Float variables holding 0 where the walk is (accumulator starts)."""
        self._call_latency: dict[str, float] = {}
        """How many copies of the current loop run side by side (an
        unrolled loop around it): they share the memory bandwidth."""
        self._seen: dict[tuple[str, str], int] = {}

    # -- segments (Eq. 4) --------------------------------------------------
    def block(self, stmts, env: dict, function: str) -> tuple[float, Resources]:
        """(cycles, area) of a statement list: straight-line runs scheduled
        as soon as possible, loops one after another."""
        cycles, area, run = 0.0, Resources(), []
        for stmt in stmts:
            self._track_value(stmt, env)
            if isinstance(stmt, k.ArrayDecl):
                self.arrays[stmt.name] = stmt
                self.spaces[stmt.name] = stmt.space
                area = area + self._array_area(stmt, stmts)
            if self._is_segment(stmt, env):
                cycles += self._latency(run)
                run = []
                segment_cycles, segment_area = self._segment(stmt, env, function)
                cycles += segment_cycles
                area = area + segment_area
            else:
                run.append(stmt)
                area = area + self._area(stmt, env, function)
        return cycles + self._latency(run), area

    def _is_segment(self, stmt, env) -> bool:
        """Loops, and statements holding one (in a branch, or in a helper
        they call)."""
        return isinstance(stmt, k.For) or self._has_loops((stmt,))

    def _has_loops(self, stmts) -> bool:
        return any(isinstance(s, (k.For, k.While)) or (
            isinstance(s, k.Call) and self._has_loops(self.module.function(s.function).body))
            for s in walk(stmts))

    def _calls(self, stmt, env, function) -> tuple[float, Resources]:
        """A statement calling helpers with loops: its own latency, then
        each helper's body (inlined, as AOC does) with the arguments the
        model can evaluate bound to the helper's parameters."""
        cycles, area = self._latency([stmt]), self._area(stmt, env, function, inline=False)
        for call in (s for s in walk((stmt,)) if isinstance(s, k.Call)):
            helper = self.module.function(call.function)
            bound = dict(env)
            for param, arg in zip(helper.params, call.args):
                value = evaluate(arg, env)
                if value is None:
                    bound.pop(param.name, None)
                else:
                    bound[param.name] = value
            spaces = self.spaces
            self.spaces = {**spaces, **{p.name: spaces.get(a.name, "global")
                                        for p, a in zip(helper.params, call.args)
                                        if isinstance(a, k.Var) and a.name in spaces}}
            helper_cycles, helper_area = self.block(helper.body, bound, call.function)
            self.spaces = spaces
            cycles, area = cycles + helper_cycles, area + helper_area
        return cycles, area

    def _segment(self, stmt, env, function) -> tuple[float, Resources]:
        if isinstance(stmt, k.For):
            return self.loop(stmt, env, function)
        if not isinstance(stmt, (k.If, k.While)):
            return self._calls(stmt, env, function)
        if isinstance(stmt, k.While):  # trip count unknown: counted once
            cycles, area = self.block(stmt.body, dict(env), function)
            return cycles + self._expr_time(stmt.cond, {}, 0.0), area
        then_cycles, then_area = self.block(stmt.then_body, dict(env), function)
        else_cycles, else_area = self.block(stmt.else_body, dict(env), function)
        return (self._expr_time(stmt.cond, {}, 0.0) + max(then_cycles, else_cycles),
                then_area + else_area + self._expr_area(stmt.cond))

    # -- loops (Eq. 1-3) -----------------------------------------------------
    def loop(self, loop: k.For, env: dict, function: str) -> tuple[float, Resources]:
        name = self._loop_name(function, loop.var)
        trips = self._trip_count(loop, env, name)
        unroll = min(loop.unroll or 1, max(trips, 1))
        inner = dict(env)
        start = evaluate(loop.start, env)
        if start is not None and trips:
            inner[loop.var] = start + loop.step * (trips - 1) // 2  # the average iteration
        else:
            inner.pop(loop.var, None)
        serial = any(isinstance(s, k.While) or (isinstance(s, k.For) and not unrolled(s, inner))
                     for s in walk(loop.body))
        copies = self.copies
        if serial:  # the unrolled copies of the inner loops run side by side
            self.copies *= unroll
        accumulated = self._accumulators(loop)   # before the body's updates are seen
        body_cycles, body_area = self.block(loop.body, inner, function)
        self.copies = copies
        recurrence, carrier = self._recurrence(loop, accumulated)
        control = self.profile.operator("loop")
        if trips <= unroll and not serial:  # completely unrolled: straight-line code
            cycles = body_cycles + max(trips - 1, 0) * recurrence
            self.loops.append(LoopReport(name, trips, unroll, 0, math.ceil(cycles),
                                         math.ceil(cycles), "unrolled", carrier))
            return cycles, body_area * trips
        iterations = math.ceil(trips / unroll)
        latency = body_cycles + (unroll - 1) * recurrence + control.latency
        area = body_area * unroll + control.area
        if serial:
            cycles = iterations * latency
            self.loops.append(LoopReport(name, trips, unroll, math.ceil(latency),
                                         math.ceil(latency), math.ceil(cycles), "serial",
                                         "loops inside"))
            return cycles, area
        moved = self.copies * unroll * self._global_bytes(loop.body)
        ii_memory = math.ceil(moved / self.bytes_per_cycle) if moved else 1
        ii = max(1, math.ceil(unroll * recurrence), ii_memory)
        limiter = ("none" if ii == 1 else carrier if ii == math.ceil(unroll * recurrence)
                   else "memory bandwidth")
        pipelined, reported = self.measured.get(name, (True, None))
        if reported is not None or not pipelined:   # aoc's report says better
            ii = reported if reported is not None else math.ceil(latency)
            limiter = "aoc report"
        cycles = (iterations - 1) * ii + latency if iterations else 0
        self.loops.append(LoopReport(name, trips, unroll, ii, math.ceil(latency),
                                     math.ceil(cycles), "pipelined", limiter))
        return cycles, area

    def _loop_name(self, function: str, var: str) -> str:
        key = (function, var)
        self._seen[key] = self._seen.get(key, 0) + 1
        return f"{function}.{var}" + ("" if self._seen[key] == 1 else f"#{self._seen[key]}")

    def _trip_count(self, loop: k.For, env: dict, name: str) -> int:
        start, stop = evaluate(loop.start, env), evaluate(loop.stop, env)
        if start is not None and stop is not None:
            return max(0, -(-(stop - start) // loop.step) if loop.step > 0
                       else -(-(start - stop) // -loop.step))
        if loop.trip_count is not None:
            return loop.trip_count
        raise TargetError(f"fpga_aoc model: loop '{name}' runs a number of times the model "
                          "cannot tell (fix: pass the program's inputs, e.g. hpvm tune "
                          "--inputs, or give the loop a trip_count= hint)")

    def _recurrence(self, loop: k.For, accumulated: set[str]) -> tuple[float, str]:
        """The longest path from a value at the start of an iteration to its
        value for the next one, and what carries it.  A float sum the loop
        reduces into (``For.reduce``) from 0, updated unconditionally, maps
        to the single-cycle accumulator where the device has one (aoc
        infers it on Arria 10; ``accumulated``): it carries nothing."""
        carried = sorted({s.name for s in walk(loop.body) if isinstance(s, k.Assign)}
                         - accumulated)
        if not loop.ivdep:
            carried += [f"mem:{b}" for b in self._shared_buffers(loop)]
        longest, carrier = 0.0, "none"
        for name in carried:
            ready = {name: 0.0}
            self._schedule(loop.body, ready, NEVER)
            length = ready.get(name, NEVER)
            if length > longest:
                longest, carrier = length, f"recurrence through {name.removeprefix('mem:')}"
        return longest, carrier

    def _accumulators(self, loop: k.For) -> set[str]:
        """Float sums ``loop`` reduces into from 0, each changed by one
        unconditional statement of its body (aoc's conditions for the
        single-cycle accumulator), on a device that has it."""
        if not self.profile.single_cycle_accumulator:
            return set()
        found = set()
        for reduction in loop.reduce:
            updates = [s for s in loop.body if folded_value(s, reduction) is not None]
            changes = [n for n in walk(loop.body)
                       if isinstance(n, k.Assign) and n.name == reduction.var]
            if reduction.op == "add" and reduction.var in self.zeroed \
                    and len(updates) == len(changes) == 1:
                found.add(reduction.var)
        return found

    def _shared_buffers(self, loop: k.For) -> list[str]:
        """Buffers the body both reads and writes, unless every access is
        to the iteration's own element (one identical index using the loop
        variable)."""
        loads: dict[str, set] = {}
        stores: dict[str, set] = {}
        for item in walk(loop.body):
            if isinstance(item, k.Load):
                loads.setdefault(item.buffer, set()).add(item.indices)
            elif isinstance(item, (k.Store, k.AtomicUpdate)):
                stores.setdefault(item.buffer, set()).add(item.indices)
        shared = []
        for name in sorted(set(loads) & set(stores)):
            indices = loads[name] | stores[name]
            own = len(indices) == 1 and any(
                isinstance(v, k.Var) and v.name == loop.var
                for index in indices for expr in index for v in walk(expr))
            if not own:
                shared.append(name)
        return shared

    def _global_bytes(self, stmts) -> int:
        total = 0
        for item in walk(stmts):
            if isinstance(item, (k.Load, k.Store, k.AtomicUpdate)) and \
                    self.spaces.get(item.buffer, "global") == "global":
                element = item.type if isinstance(item, k.Load) else self._element(item.buffer)
                total += max(element.bits // 8, 1)
        return total

    def _element(self, buffer: str):
        if buffer in self.arrays:
            return self.arrays[buffer].element
        for function in self.module.functions.values():
            for p in function.params:
                if p.name == buffer and isinstance(p.type, BufferType):
                    return p.type.element
        return k.I64

    # -- straight-line scheduling ------------------------------------------
    def _latency(self, run: list) -> float:
        if not run:
            return 0.0
        ready: dict[str, float] = {}
        return max(self._schedule(run, ready, 0.0), 0.0)

    def _schedule(self, stmts, ready: dict, default: float) -> float:
        """As-soon-as-possible schedule of ``stmts``: updates ``ready`` (the
        cycle each variable, and ``mem:B`` each buffer's last store, is
        ready; unknown names at ``default``) and returns the last cycle."""
        end = NEVER
        for stmt in stmts:
            if isinstance(stmt, (k.Let, k.Assign)):
                if stmt.value is not None:
                    ready[stmt.name] = self._expr_time(stmt.value, ready, default)
                    end = max(end, ready[stmt.name])
            elif isinstance(stmt, (k.Store, k.AtomicUpdate)):
                times = [self._expr_time(e, ready, default) for e in stmt.indices + (stmt.value,)]
                done = max(times + [ready.get(f"mem:{stmt.buffer}", default)]) + \
                    self._memory_op(stmt.buffer, "atomic" if isinstance(stmt, k.AtomicUpdate)
                                    else "store").latency
                ready[f"mem:{stmt.buffer}"] = done
                if isinstance(stmt, k.AtomicUpdate) and stmt.result:
                    ready[stmt.result] = done
                end = max(end, done)
            elif isinstance(stmt, k.ExprStmt):
                end = max(end, self._expr_time(stmt.call, ready, default))
            elif isinstance(stmt, k.If):
                cond = self._expr_time(stmt.cond, ready, default)
                branches = []
                for body in (stmt.then_body, stmt.else_body):
                    branch = dict(ready)
                    end = max(end, self._schedule(body, branch, default))
                    branches.append(branch)
                for name in set(branches[0]) | set(branches[1]):
                    times = [b.get(name, default) for b in branches]
                    ready[name] = max(times + [cond]) if max(times) > NEVER else NEVER
                end = max(end, cond)
            elif isinstance(stmt, (k.For, k.While)):
                inner = self._schedule(stmt.body, ready, default)
                end = max(end, inner)
        return end

    def _expr_time(self, e: k.Expr, ready: dict, default: float) -> float:
        if isinstance(e, k.Var):
            return ready.get(e.name, default)
        if isinstance(e, (k.Const, k.InstanceId, k.InstanceCount)):
            return default if default == NEVER else 0.0
        times = [self._expr_time(c, ready, default) for c in operands(e)]
        if isinstance(e, k.Load):
            times.append(ready.get(f"mem:{e.buffer}", default))
        start = max(times) if times else default
        if start == NEVER:
            return NEVER
        if isinstance(e, k.Call):
            if e.function not in self._call_latency:   # the same wherever it is called
                self._call_latency[e.function] = self._latency(
                    list(self.module.function(e.function).body))
            return start + self._call_latency[e.function]
        return start + self._operator(e).latency

    # -- area ----------------------------------------------------------------
    def _area(self, stmt, env, function, inline: bool = True) -> Resources:
        area = Resources()
        for item in walk((stmt,)):
            if isinstance(item, k.Expr):
                area = area + self._operator(item).area
            elif isinstance(item, (k.Store, k.AtomicUpdate)):
                kind = "atomic" if isinstance(item, k.AtomicUpdate) else "store"
                area = area + self._memory_op(item.buffer, kind).area
            if isinstance(item, k.Call) and inline:
                area = area + self.block(self.module.function(item.function).body,
                                         dict(env), item.function)[1]
        return area

    def _expr_area(self, e: k.Expr) -> Resources:
        return sum((self._operator(x).area for x in walk(e) if isinstance(x, k.Expr)),
                   Resources())

    def _array_area(self, decl: k.ArrayDecl, scope) -> Resources:
        size = math.prod(decl.shape) * max(decl.element.bits // 8, 1)
        if size <= REGISTER_ARRAY_BYTES:
            return Resources(registers=size * 8)
        sites = sum(1 for s in walk(scope) if isinstance(s, (k.Load, k.Store))
                    and s.buffer == decl.name)
        copies = max(1, math.ceil(sites / 2))
        return Resources(m20k=math.ceil(size * 8 / M20K_BITS) * copies)

    # -- operators -------------------------------------------------------------
    def _operator(self, e: k.Expr):
        return self.profile.operator(operator_name(e, self))

    def _memory_op(self, buffer: str, kind: str):
        space = self.spaces.get(buffer, "global")
        if space == "global":
            return self.profile.operator(f"{kind}_global")
        decl = self.arrays.get(buffer)
        small = decl is not None and math.prod(decl.shape) * max(decl.element.bits // 8, 1) \
            <= REGISTER_ARRAY_BYTES
        return self.profile.operator("select" if small else
                                     "load_local" if kind == "load" else "store_local")

    def _track_value(self, stmt, env: dict) -> None:
        """Keep integer values the trip counts may need (``let n = N / 2``),
        and which float variables hold 0 (accumulators start there)."""
        if isinstance(stmt, (k.Let, k.Assign)):
            zero = (isinstance(stmt.value, k.Const) and stmt.value.type.is_float
                    and stmt.value.value == 0)
            (self.zeroed.add if zero else self.zeroed.discard)(stmt.name)
            value = evaluate(stmt.value, env) if stmt.value is not None else None
            if value is None:
                env.pop(stmt.name, None)
            else:
                env[stmt.name] = value
