"""Program dependence graphs of kernel functions, canonicalised for matching.

:func:`build_pdg` turns a :class:`KernelFunction` into a networkx DiGraph
whose nodes are operations and whose edges are data dependences (operand
to user, labelled with the operand's position) and control dependences
(a loop or branch to the operations it governs).  Semantic matchers
(hpvm.passes.pdg_match, the fixedfunc target) look for a pattern in it by
subgraph isomorphism, so the graph is canonical in what should not matter:

- **names**: locals vanish; every use points at the operation that made
  its value (a variable assigned in a branch becomes a ``select`` of the
  two values; one assigned in a loop a ``phi`` fed by its value before the
  loop, ``init``, and at the end of the body, ``next``);
- **operand order** of commutative operations: their operands carry no
  position (edge ``pos`` = ``("c", count)``);
- **constants** fold (the kernel is constant-folded first); equal pure
  expressions are one node (loads too, between stores to their buffer);
- **loop index shifts**: every counted loop runs an ``index`` from 0 by 1;
  its variable is ``start + index`` (``start - index`` for step -1), so
  ``for t in range(1, T): a[t - 1]`` and ``for t in range(T - 1): a[t]``
  give one graph;
- **association**: integer sums, products, and, or, xor, and min and max
  of any type, are one n-ary node (exact); a float sum or product written
  as one expression (``a + b + c``) is one n-ary node too, a matching
  convention (the accelerator that replaces a matched kernel rounds in its
  own order), but never through a variable; ``a - b`` is ``a + (-b)``,
  ``x << c`` is ``x * 2^c``, ``a > b`` is ``b < a``, ``(-a) * b`` is
  ``-(a * b)``; integer casts between integer types are transparent;
  ``p < m ? p : m`` is ``min(p, m)``.

Node attributes: ``label`` (what a pattern matches: ``add``, ``load`` ...),
``type`` (``f`` float, ``i`` integer, ``b`` bool, None for statements) and
facts for binding rules: ``array`` and ``indices`` (node ids) of loads and
stores, ``value`` of constants, ``name`` of parameters and symbols,
``dim`` of instance ids, ``arity`` (the number of data operands),
``affine`` (integer nodes that are affine in other nodes: a tuple of
(atom node id or UNIT, coefficient) pairs, sorted; UNIT, the string
``"1"``, marks the constant term, never a node id).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

from ..ir.analysis import assigned_variables
from ..ir.kernel import (ArrayDecl, Assign, AtomicUpdate, Binary, Bitcast, Call, Cast,
                         Compare, Const, Expr, ExprStmt, For, If, InstanceCount, InstanceId,
                         Intrinsic, KernelFunction, Let, Load, Return, Select, Store, Unary, Var,
                         While)
from ..ir.visit import walk
from .const_fold import fold_function
from .induction import counted_while
from .value_ranges import UNIT, ValueRanges, difference, frozen_form

COMMUTATIVE = frozenset({"add", "mul", "and", "or", "xor", "land", "lor", "min", "max", "eq", "ne"})
ASSOCIATIVE = frozenset({"add", "mul", "and", "or", "xor", "min", "max"})
SWAPPED_COMPARE = {"gt": "lt", "ge": "le"}


@dataclass
class ProgramDependenceGraph:
    """The PDG of ``function``: ``graph``, a networkx DiGraph (see the
    module docstring)."""

    function: KernelFunction
    graph: nx.DiGraph = field(default_factory=nx.DiGraph)

    def label(self, node: int) -> str:
        return self.graph.nodes[node]["label"]

    def facts(self, node: int) -> dict:
        return self.graph.nodes[node]

    def operands(self, node: int, repeated: bool = False) -> list[int]:
        """Data operands of ``node`` in position order (commutative ones in
        id order); ``repeated``: an operand of a commutative node used n
        times (``x * x``) comes n times."""
        edges = [(data["pos"], source) for source, _, data in self.graph.in_edges(node, data=True)
                 if data["kind"] == "data"]
        ordered = sorted(edges, key=lambda e: (_order(e[0]), e[1]))
        if not repeated:
            return [source for _, source in ordered]
        return [source for position, source in ordered
                for _ in range(position[1] if _commutative(position) else 1)]

    def affine(self, node: int) -> dict:
        """``node``'s value as {atom: coefficient} (atom UNIT: the constant
        term); {node: 1} when it is not affine."""
        form = self.graph.nodes[node].get("affine")
        return dict(form) if form is not None else {node: 1}


def build_pdg(function: KernelFunction) -> ProgramDependenceGraph:
    """The canonical program dependence graph of ``function``."""
    builder = _Builder(ProgramDependenceGraph(function))
    builder.statements(fold_function(function).body)
    _prune(builder.pdg.graph)
    _count_operands(builder.pdg.graph)
    return builder.pdg


class _Builder:
    def __init__(self, pdg: ProgramDependenceGraph):
        self.pdg = pdg
        self.graph = pdg.graph
        self.memo: dict[tuple, int] = {}
        self.env: dict[str, int | None] = {}
        self.versions: dict[str, int] = {}
        self.region: tuple[int, str] | None = None
        self.fresh_version = 0
        self.stores: dict[tuple[str, int], tuple[int, tuple[int, ...]]] = {}
        """(buffer, version) -> (the version before, the indices of the
        store that made it): the stores a load may look past."""
        self.ranges = ValueRanges(pdg, frozenset(
            d for p in pdg.function.params if p.is_buffer for d in p.type.shape
            if isinstance(d, str)))
        for param in pdg.function.params:
            if param.is_buffer:
                self.versions[param.name] = 0
            else:
                self.env[param.name] = self.node("param", _type_of(param.type), key=("param", param.name),
                                                 name=param.name)

    # nodes --------------------------------------------------------------------
    def node(self, label: str, type_: str | None, operands=(), key=None, **facts) -> int:
        """A node with ``operands`` (ids, or (id, position) pairs); pure
        nodes with a ``key`` are made once."""
        if key is not None and key in self.memo:
            return self.memo[key]
        node = self.graph.number_of_nodes()
        self.graph.add_node(node, label=label, type=type_, **facts)
        for position, operand in operands:
            self._edge(operand, node, "data", position)
        if key is not None:
            self.memo[key] = node
        elif self.region is not None:
            self._edge(self.region[0], node, "ctl", self.region[1])
        return node

    def _edge(self, source: int, target: int, kind: str, position) -> None:
        if self.graph.has_edge(source, target):   # an operand used twice: x * x
            data = self.graph.edges[source, target]
            if data["kind"] == kind and _commutative(data["pos"]):
                data["pos"] = ("c", data["pos"][1] + 1)
            else:
                data["pos"] = tuple(sorted({*_positions(data["pos"]), position}, key=str))
            return
        self.graph.add_edge(source, target, kind=kind, pos=position)

    def operation(self, op: str, type_: str, operands: list[int]) -> int:
        """The canonical node of ``op`` over ``operands``."""
        if op == "mul" and type_ == "f" and any(self.graph.nodes[o]["label"] == "neg" for o in operands):
            # (-a) * b is -(a * b), exactly
            negated = [o for o in operands if self.graph.nodes[o]["label"] == "neg"]
            plain = [self.pdg.operands(o)[0] if o in negated else o for o in operands]
            product = self.operation("mul", type_, plain)
            return self._negate(product, type_) if len(negated) % 2 else product
        if op in ASSOCIATIVE:
            operands = self._flatten(op, type_, operands)
            if len(operands) == 1:
                return operands[0]
        if op in COMMUTATIVE:
            operands = sorted(operands)
            counts = {o: operands.count(o) for o in operands}
            edges = [(("c", n), o) for o, n in counts.items()]
            return self.node(op, type_, edges, key=(op, type_, tuple(operands)),
                             affine=self._affine(op, type_, operands))
        return self.node(op, type_, list(enumerate(operands)), key=(op, type_, tuple(operands)),
                         affine=self._affine(op, type_, operands))

    def _flatten(self, op: str, type_: str, operands: list[int]) -> list[int]:
        flat = []
        for operand in operands:
            facts = self.graph.nodes[operand]
            if facts["label"] == op and facts["type"] == type_ and (type_ != "f" or op in ("min", "max")):
                flat.extend(self.pdg.operands(operand))
            else:
                flat.append(operand)
        if type_ == "i" and op in ("add", "mul"):
            constants = [self.graph.nodes[o]["value"] for o in flat if self.graph.nodes[o]["label"] == "const"]
            flat = [o for o in flat if self.graph.nodes[o]["label"] != "const"]
            folded = sum(constants) if op == "add" else math.prod(constants)
            if op == "mul" and folded == 0:
                return [self.constant(0, "i")]
            if folded != (0 if op == "add" else 1) or not flat:
                flat.append(self.constant(folded, "i"))
        return flat

    def _affine(self, op: str, type_: str, operands: list[int]):
        if type_ != "i":
            return None
        forms = [self.pdg.affine(o) for o in operands]
        if op == "add":
            total: dict = {}
            for form in forms:
                for atom, coefficient in form.items():
                    total[atom] = total.get(atom, 0) + coefficient
            return frozen_form(total)
        if op == "mul":
            constant_forms = [f for f in forms if set(f) == {UNIT}]
            if len(constant_forms) == len(forms) - 1:
                scale = math.prod(f[UNIT] for f in constant_forms)
                (form,) = [f for f in forms if set(f) != {UNIT}]
                return frozen_form({atom: c * scale for atom, c in form.items()})
        if op == "neg":
            return frozen_form({atom: -c for atom, c in forms[0].items()})
        return None

    def constant(self, value, type_: str) -> int:
        return self.node("const", type_, key=("const", type_, value), value=value,
                         affine=((UNIT, value),) if type_ == "i" else None)

    # expressions --------------------------------------------------------------
    def value(self, expr: Expr) -> int:
        method = getattr(self, "_" + type(expr).__name__.lower())
        return method(expr)

    def _const(self, expr: Const) -> int:
        return self.constant(expr.value, _type_of(expr.type))

    def _var(self, expr: Var) -> int:
        if self.env.get(expr.name) is not None:
            return self.env[expr.name]
        return self.node("symbol", _type_of(expr.type), key=("symbol", expr.name), name=expr.name)

    def _instanceid(self, expr: InstanceId) -> int:
        return self.node("instance_id", "i", key=("instance_id", expr.dim), dim=expr.dim)

    def _instancecount(self, expr: InstanceCount) -> int:
        return self.node("instance_count", "i", key=("instance_count", expr.dim), dim=expr.dim)

    def _unary(self, expr: Unary) -> int:
        operand = self.value(expr.operand)
        if expr.op == "neg":
            return self._negate(operand, _type_of(expr.type))
        return self.operation(expr.op, _type_of(expr.type), [operand])

    def _binary(self, expr: Binary) -> int:
        type_ = _type_of(expr.type)
        if type_ == "f" and expr.op in ("add", "sub", "mul"):
            # floats re-associate within one expression, never through a
            # variable: a named value stays one node
            if expr.op == "mul":
                return self.operation("mul", type_, [self.value(e) for e in _factors(expr)])
            return self.operation("add", type_, [self._negate(self.value(e), type_) if negative
                                                 else self.value(e) for negative, e in _terms(expr)])
        lhs, rhs = self.value(expr.lhs), self.value(expr.rhs)
        if expr.op == "sub":
            return self.operation("add", type_, [lhs, self._negate(rhs, type_)])
        if expr.op == "shl" and isinstance(expr.rhs, Const) and 0 <= expr.rhs.value < 63:
            return self.operation("mul", type_, [lhs, self.constant(1 << expr.rhs.value, type_)])
        return self.operation(expr.op, type_, [lhs, rhs])

    def _negate(self, node: int, type_: str) -> int:
        facts = self.graph.nodes[node]
        if facts["label"] == "const":
            return self.constant(-facts["value"], type_)
        if facts["label"] == "neg":
            return self.pdg.operands(node)[0]
        return self.operation("neg", type_, [node])

    def _compare(self, expr: Compare) -> int:
        lhs, rhs = self.value(expr.lhs), self.value(expr.rhs)
        op = expr.op
        if op in SWAPPED_COMPARE:
            op, lhs, rhs = SWAPPED_COMPARE[op], rhs, lhs
        return self.operation(op, "b", [lhs, rhs])

    def _select(self, expr: Select) -> int:
        return self.select(self.value(expr.cond), self.value(expr.if_true),
                           self.value(expr.if_false), _type_of(expr.type))

    def select(self, cond: int, if_true: int, if_false: int, type_: str) -> int:
        """``cond ? if_true : if_false``, as min or max where it is one."""
        if if_true == if_false:
            return if_true
        facts = self.graph.nodes[cond]
        if facts["label"] in ("lt", "le"):
            lhs, rhs = self.pdg.operands(cond)
            if (if_true, if_false) == (lhs, rhs):
                return self.operation("min", type_, [lhs, rhs])
            if (if_true, if_false) == (rhs, lhs):
                return self.operation("max", type_, [lhs, rhs])
        return self.node("select", type_, [("cond", cond), ("then", if_true), ("else", if_false)],
                         key=("select", cond, if_true, if_false))

    def _cast(self, expr: Cast) -> int:
        value = self.value(expr.value)
        type_ = _type_of(expr.type)
        if type_ == "i" and self.graph.nodes[value]["type"] == "i":
            return value
        return self.node("cast", type_, [(0, value)], key=("cast", type_, value))

    def _bitcast(self, expr: Bitcast) -> int:
        value = self.value(expr.value)
        type_ = _type_of(expr.type)
        return self.node("bitcast", type_, [(0, value)], key=("bitcast", type_, value))

    def _load(self, expr: Load) -> int:
        indices = tuple(self.value(i) for i in expr.indices)
        version = self._unchanged_since(expr.buffer, indices)
        return self.node("load", _type_of(expr.type), list(enumerate(indices)),
                         key=("load", expr.buffer, indices, version),
                         array=expr.buffer, indices=indices)

    def _unchanged_since(self, buffer: str, indices: tuple[int, ...]) -> int:
        """The earliest version of ``buffer`` whose element at ``indices``
        no store since has changed: the walk back past stores to provably
        other elements (value_ranges.py) stops at a load already made
        there, at a store that may write the element, or where the
        versions began (a loop or a branch merging)."""
        version = self.versions.get(buffer, 0)
        while ("load", buffer, indices, version) not in self.memo \
                and (buffer, version) in self.stores:
            before, written = self.stores[(buffer, version)]
            if not self._elsewhere(indices, written):
                break
            version = before
        return version

    def _elsewhere(self, indices: tuple[int, ...], written: tuple[int, ...]) -> bool:
        """Whether ``indices`` and ``written`` provably name two elements:
        in some dimension they differ by a value never zero."""
        return len(indices) == len(written) and any(
            a != b and self.ranges.nonzero(difference(self.pdg.affine(a), self.pdg.affine(b)))
            for a, b in zip(indices, written))

    def _intrinsic(self, expr: Intrinsic) -> int:
        return self.operation(expr.name, _type_of(expr.type), [self.value(a) for a in expr.args])

    def _call(self, expr: Call) -> int:
        args = [self.value(a) for a in expr.args]
        return self.node(f"call:{expr.function}", _type_of(expr.type) if expr.type else None,
                         list(enumerate(args)))

    # statements ---------------------------------------------------------------
    def statements(self, body) -> None:
        for statement in body:
            self.statement(statement)

    def statement(self, statement) -> None:
        kind = type(statement)
        if kind in (Let, Assign):
            if getattr(statement, "value", None) is not None:
                self.env[statement.name] = self.value(statement.value)
            else:
                self.env.setdefault(statement.name, None)
        elif kind in (Store, AtomicUpdate):
            self._store(statement)
        elif kind is If:
            self._if(statement)
        elif kind in (For, While):
            self._loop(statement)
        elif kind is ArrayDecl:
            self.versions[statement.name] = self._new_version()
        elif kind is Return:
            operands = [(0, self.value(statement.value))] if statement.value is not None else []
            self.node("return", None, operands)
        elif kind is ExprStmt:
            self._call(statement.call)
        # Barrier: orders memory between instances, not within one

    def _store(self, statement) -> None:
        indices = tuple(self.value(i) for i in statement.indices)
        label = "store" if isinstance(statement, Store) else f"atomic_{statement.op}"
        self.node(label, None, [*enumerate(indices), ("value", self.value(statement.value))],
                  array=statement.buffer, indices=indices)
        before = self.versions.get(statement.buffer, 0)
        self.versions[statement.buffer] = self._new_version()
        self.stores[(statement.buffer, self.versions[statement.buffer])] = (before, indices)
        if isinstance(statement, AtomicUpdate) and statement.result:
            self.env[statement.result] = self.node("atomic_result", None, [])

    def _new_version(self) -> int:
        self.fresh_version += 1
        return self.fresh_version

    def _if(self, statement: If) -> None:
        cond = self.value(statement.cond)
        branch = self.node("if", None, [("cond", cond)])
        before_env, before_versions, outer = dict(self.env), dict(self.versions), self.region
        results = []
        for name, body in (("then", statement.then_body), ("else", statement.else_body)):
            self.env, self.versions, self.region = dict(before_env), dict(before_versions), (branch, name)
            self.ranges.push(cond, holds=name == "then")
            self.statements(body)
            self.ranges.pop()
            results.append((self.env, self.versions))
        self.region = outer
        (then_env, then_versions), (else_env, else_versions) = results
        self.env = dict(before_env)
        for name in before_env:
            if then_env.get(name) is not None and else_env.get(name) is not None:
                type_ = self.graph.nodes[then_env[name]]["type"]
                self.env[name] = self.select(cond, then_env[name], else_env[name], type_)
        self.versions = {array: version if version == else_versions.get(array) else self._new_version()
                         for array, version in then_versions.items()}

    def _loop(self, statement) -> None:
        counted = isinstance(statement, For)
        body = statement.body
        induction = None if counted else counted_while(statement, self.env)
        if induction is not None:
            body = body[:-1]  # the increment: the index stands for it
        declared = set(self.env)
        assigned = assigned_variables(body)
        carried = sorted(name for name in assigned if self.env.get(name) is not None)
        if counted:
            start, stop = self.value(statement.start), self.value(statement.stop)
            trip = (self.operation("add", "i", [stop, self._negate(start, "i")]) if statement.step > 0
                    else self.operation("add", "i", [start, self._negate(stop, "i")]))
            loop = self.node("loop", None, [("trip", trip)], step=statement.step)
        elif induction is not None:
            variable, bound, inclusive = induction
            start, stop = self.env[variable], self.value(bound)
            if inclusive:
                stop = self.operation("add", "i", [stop, self.constant(1, "i")])
            trip = self.operation("add", "i", [stop, self._negate(start, "i")])
            loop = self.node("loop", None, [("trip", trip)], step=1)
        else:
            loop = self.node("while", None, [])
        outer = self.region
        self.region = (loop, "body")
        phis = {}
        for name in carried:
            initial = self.env[name]
            phis[name] = self.node("phi", self.graph.nodes[initial]["type"],
                                   [("init", initial)], loop=loop)
            self.ranges.carry(phis[name], name, statement.body, initial)
            self.env[name] = phis[name]
        stored = _stored(statement.body)
        for array in stored:
            self.versions[array] = self._new_version()
        if counted or induction is not None:
            index = self.node("index", "i", [], loop=loop)
            direction = self._negate(index, "i") if counted and statement.step < 0 else index
            self.env[statement.var if counted else induction[0]] = \
                self.operation("add", "i", [start, direction])
            self.ranges.push()
        else:
            cond = self.value(statement.cond)
            self._edge(cond, loop, "data", "cond")
            self.ranges.push(cond)  # the condition holds in the body
        self.statements(body)
        self.ranges.pop()
        self.region = outer
        for name, phi in phis.items():
            if self.env.get(name) not in (None, phi):
                self._edge(self.env[name], phi, "data", "next")
            self.env[name] = phi
        for name in (set(self.env) - declared) | (assigned - set(phis)):
            self.env.pop(name, None)        # declared, or first given a value, in the body
        for array in stored:
            self.versions[array] = self._new_version()
        if induction is not None:  # it leaves the loop at the bound, or where it started
            self.env[induction[0]] = self.operation("max", "i", [start, stop])


def _prune(graph: nx.DiGraph) -> None:
    """Remove values nothing uses (the partial sums flattening left) and
    branches left empty (their assignments became selects)."""
    def unused(node) -> bool:
        facts = graph.nodes[node]
        if graph.out_degree(node) or facts["label"] in ("index", "phi") or facts["label"].startswith("call:"):
            return False
        return facts["type"] is not None or facts["label"] == "if"

    dead = [node for node in graph.nodes if unused(node)]
    while dead:
        node = dead.pop()
        if node not in graph:
            continue
        sources = list(graph.predecessors(node))
        graph.remove_node(node)
        dead.extend(source for source in sources if unused(source))


def _count_operands(graph: nx.DiGraph) -> None:
    """Each node's ``arity``: how many data operands it has (an operand
    used twice counts twice)."""
    for node in graph.nodes:
        count = 0
        for _, _, data in graph.in_edges(node, data=True):
            if data["kind"] == "data":
                position = data["pos"]
                count += position[1] if _commutative(position) else (
                    len(position) if isinstance(position, tuple) else 1)
        graph.nodes[node]["arity"] = count


def _terms(expr: Expr, negative: bool = False) -> list[tuple[bool, Expr]]:
    """The terms of a float sum written as one expression, with their signs."""
    if isinstance(expr, Binary) and expr.op in ("add", "sub"):
        return _terms(expr.lhs, negative) + _terms(expr.rhs, negative != (expr.op == "sub"))
    if isinstance(expr, Unary) and expr.op == "neg":
        return _terms(expr.operand, not negative)
    return [(negative, expr)]


def _factors(expr: Expr) -> list[Expr]:
    if isinstance(expr, Binary) and expr.op == "mul":
        return _factors(expr.lhs) + _factors(expr.rhs)
    return [expr]


def _stored(body) -> list[str]:
    return list(dict.fromkeys(node.buffer for node in walk(body) if isinstance(node, (Store, AtomicUpdate))))


def _type_of(type_) -> str:
    kind = getattr(type_, "kind", None)
    if kind == "float":
        return "f"
    if kind == "bool":
        return "b"
    return "i"


def _order(position) -> tuple:
    """Sort key of edge positions: integers in order, then names."""
    return (0, position, "") if isinstance(position, int) else (1, 0, str(position))


def _commutative(position) -> bool:
    """Whether an edge position is a commutative operand's: ("c", uses)."""
    return isinstance(position, tuple) and position[:1] == ("c",)


def _positions(position) -> tuple:
    return position if isinstance(position, tuple) else (position,)
