"""``loop-instances``: a task that is one loop over independent iterations
becomes a node of as many instances, which targets run in parallel.

A program written sequentially puts its loop in one task::

    with task(...):
        for i in range(M):
            acc = 0.0
            for k in range(K): acc += a[i, k] * x[k]
            out[i] = acc

One instance runs every row on one core.  The rows share nothing, so the
node can be what ``parallel_loop(M)`` writes: M instances, instance i
running iteration i (the cpu spreads them over its cores and vector
lanes, a GPU over its work items); an element a loop of the iteration
alone updates is kept in a variable while that loop runs
(element_promotion.py).  Each iteration computes what it did,
in the same order, so the results are the same bit for bit.

Which nodes: those named in ``nodes`` (``node`` or ``graph.node``), or
every kernel node that runs once, in a graph that does not stream, whose
function's body is values (lets) and then one loop stepping by 1, whose
bounds read only constants, sizes and integer scalar inputs (the
replication is sized from them), and whose iterations share nothing the
body writes or assigns (loop_nests.iterations_share: each buffer written
is accessed with the loop's variable at one index position in every
access, or no two of its accesses meet in different iterations, as a
symmetric result's row and mirrored column do not). The values before
the loop are computed by every instance. A named node that does not
qualify is refused with the reason.

A loop whose iterations share what they write, heading a perfect nest
with a loop further in whose iterations share nothing, runs that loop as
the instances, swapped outwards one loop at a time where legal
(loop_interchange.py), when two loops at least stay inside it (trmm's
columns). With one loop inside, walking its arrays along itself, and
``cores`` given, the instances are strips of its iterations, one a core,
each running the rows of its strip (strip_instances.py: atax's ``y[j]
+= A[i, j] * tmp[i]``): one core walking rows beats the cores walking
columns, and the cores walking the rows of strips beat both. With
``outward``, only such tasks: default pipelines run them before
loop-interchange, which would cut the loop into strips of its own.

With ``reused``, only tasks whose loop holds, after values, a second loop
of the same kind (independent iterations, bounds from constants and
sizes), which together read values reused across both: a matrix product
written as loops (``for i: for j: c[i, j] *= s; for k: c[i, j] += a[i, k]
* b[k, j]``, PolyBench's order of old). Instance (i, j) runs iteration j
of iteration i, the elements its innermost loops update kept in variables
(element_promotion.py), so that the node is what ``parallel_loop(M, N)``
writes and register-tile schedules (its plan, register_tile_plan.py, is
the test of reuse: reads the same along a row of instances and reads the
same down a column). A row written as loops over the columns in turn
(PolyBench 4.2's ``for j: c[i, j] *= s`` then ``for k: for j: c[i, j] +=
...``) is first made one loop over the columns: each nest swapped where
legal (loop_interchange.py), then the loops fused where legal
(loop_fusion.py). A triangle (the inner loop's start or stop the outer
variable plus a value: syrk's ``for j in range(i + 1)``) runs over the
box around it, each place computing its value and only those of the
triangle storing it (triangle_boxes.py). Default pipelines run this
first, before loop-interchange would put such a nest's columns
innermost.
"""
from __future__ import annotations

import dataclasses

from ..errors import Diagnostic, Location
from ..ir.analysis import uses_barrier
from ..ir.graph import Graph, KernelBody, Module, Node
from ..ir.kernel import (
    Binary, Cast, Const, For, InstanceCount, InstanceId, Intrinsic, KernelFunction, Let, Stmt,
    Unary, Var,
)
from ..ir.reduction import reads_variable
from ..ir.types import I64
from ..ir.visit import walk
from .loop_fusion import fused
from .loop_interchange import interchange_problem, swapped
from .loop_nests import sharing_problem
from .errors import PassError
from .module_tools import iter_nodes, named_kernel_nodes, task_problem
from .element_promotion import promoted
from .names import unique_name
from .register_tile_plan import nest_plans
from .reduce_forms import as_i64, offset, trip_count
from .strip_instances import in_strips
from .registry import Option, register_pass
from .tensor_graph import replace_node
from .triangle_boxes import Box, box, guarded


SIZE_EXPRESSIONS = (Const, Var, Binary, Unary, Cast, Intrinsic)
"""What a replication's size may be made of (core/ir/shapes.evaluate_size)."""


@register_pass("loop-instances", options=[
    Option("nodes", list, (), "task nodes to run as instances of their loop, as node or "
                              "graph.node (default: every one that qualifies)"),
    Option("reused", bool, False, "only tasks whose two loops read values reused across "
           "both (a matrix product's rows and columns), each as instances of both loops"),
    Option("outward", bool, False, "only tasks whose loop's iterations share what they "
           "write, run as instances of a loop further in that is swapped outwards"),
    Option("cores", int, 0, "the cores a nest walking rows whose columns share nothing is cut "
           "into strips of columns for (strip_instances.py; 0: none cut)", minimum=0)])
def loop_instances(module: Module, nodes: tuple[str, ...], reused: bool,
                   outward: bool = False, cores: int = 0) -> Module:
    """Run each qualifying task's loop as the node's instances; with
    ``reused``, only two loops whose reads are reused across both, as a
    node of two dimensions; with ``outward``, only loops swapped outwards
    past one whose iterations share."""
    chosen = []   # (graph, node, the loop run as instances or None where reused)
    for graph, node in named_kernel_nodes(module, nodes, "loop-instances") if nodes else \
            iter_nodes(module):
        found = _instances_plan(module, graph, node, reused, outward, cores)
        if not isinstance(found, str):
            chosen.append((graph.name, node.name, found))
        elif nodes:
            raise PassError(Diagnostic(
                Location(graph=graph.name, node=node.name),
                f"loop-instances: node '{node.name}' {found}",
                "leave it out of nodes=; its loop runs in one instance"))
    for graph_name, node_name, loop in chosen:
        graph = module.graph(graph_name)
        node = graph.node(node_name)
        module = _as_nest_instances(module, graph, node) if reused else \
            _as_instances(module, graph, node, loop)
    return module


def instances_problem(module: Module, graph: Graph, node: Node, reused: bool = False,
                      outward: bool = False, cores: int = 0) -> str | None:
    """Why ``node`` cannot run its loop as instances (module docstring);
    with ``reused``, its two loops as instances of two dimensions; with
    ``outward``, a loop further in swapped outwards."""
    found = _instances_plan(module, graph, node, reused, outward, cores)
    return found if isinstance(found, str) else None


def _instances_plan(module: Module, graph: Graph, node: Node, reused: bool, outward: bool,
                    cores: int) -> str | For | None:
    """instances_problem's reason; else the loop ``node`` runs as
    instances (_parallel_outward's), or None with ``reused``."""
    problem = task_problem(graph, node)
    if problem is not None:
        return problem
    function = module.function(node.body.function)
    body = function.body
    problem = _loop_problem(body, function)
    if problem is not None:
        return problem
    if any(isinstance(n, (InstanceId, InstanceCount)) for n in walk(body)) or \
            uses_barrier(module, function.name):
        return "reads its instance or waits at a barrier"
    if not reused:
        loop = _parallel_outward(body[-1], function, module, cores)
        if outward and loop is body[-1]:
            return (f"has no loop inside its loop '{loop.var}' to run outwards (one whose "
                    "iterations share nothing, swapped legally, with two loops inside it "
                    "or walking rows in strips)")
        return _outward_problem(body, loop, function, module) or loop
    problem = sharing_problem(body[-1], module)
    if problem is not None:
        return problem
    outer = _columns_outward(body[-1], function, module)
    problem = _loop_problem(_boxed(outer)[0].body, function)
    if problem is not None:
        return f"has in its loop '{outer.var}' {problem.removeprefix('has ')}"
    inner = outer.body[-1]
    problem = sharing_problem(inner, module)
    if problem is not None:
        return problem
    nest = _nest_body(outer, function)
    if isinstance(nest, str):
        return f"has in its loop '{outer.var}' a triangle that {nest}"
    plans = nest_plans(*_nested(module, graph, node, outer, nest))
    return f"as instances of '{outer.var}' and '{inner.var}' {plans}" \
        if isinstance(plans, str) else None


def nest_problem(loop: For, function: KernelFunction, module: Module) -> str | None:
    """Why ``loop`` of ``function``, in a node of its own, could not run as
    instances of its two loops (``reused``); None when it could."""
    name = unique_name(f"{function.name}_nest", module.functions)
    node = Node(name, KernelBody(name))
    graph = Graph(unique_name("nest", module.graphs), function.params, (node,))
    probe = dataclasses.replace(
        module, functions={**module.functions,
                           name: dataclasses.replace(function, name=name, body=(loop,))},
        graphs={**module.graphs, graph.name: graph})
    return instances_problem(probe, graph, node, reused=True)


def loop_problem(body: tuple[Stmt, ...], function: KernelFunction, module: Module,
                 cores: int = 0) -> str | None:
    """Why statements ``body`` of ``function`` could not run as instances
    of their loop, of one further in swapped outwards, or (given
    ``cores``) of strips of one (values, then one loop over iterations
    that share nothing, counted from sizes); None when they could."""
    problem = _loop_problem(body, function)
    if problem is not None:
        return problem
    return _outward_problem(body, _parallel_outward(body[-1], function, module, cores),
                            function, module)


def _outward_problem(body: tuple[Stmt, ...], loop: For, function: KernelFunction,
                     module: Module) -> str | None:
    """Why ``body`` could not run as instances of ``loop``, its last loop
    or that loop as _parallel_outward gives it, swapped outwards or in
    strips: those share nothing (_swapped_outward checked)."""
    return _loop_problem((*body[:-1], loop), function) or \
        (sharing_problem(loop, module) if loop is body[-1] else None)


def _loop_problem(body: tuple[Stmt, ...], function: KernelFunction) -> str | None:
    """Why ``body`` is not values and then one loop that a replication can
    count; None when it is."""
    if not body or not isinstance(body[-1], For) or \
            not all(isinstance(s, Let) for s in body[:-1]):
        return "has a body other than values and then one loop"
    loop = body[-1]
    if loop.step != 1:
        return f"has a loop '{loop.var}' that steps by other than 1"
    if not counted_from_sizes(loop, function):
        return (f"has a loop '{loop.var}' whose bounds are more than arithmetic, min and max "
                "of constants, sizes and integer scalar inputs (the node's replication is sized "
                "from them)")
    return None


def counted_from_sizes(loop: For, function: KernelFunction) -> bool:
    """Whether ``loop``'s bounds are arithmetic, min and max of constants,
    sizes and integer scalar inputs of ``function``: the same for every
    iteration of any loop around it, and what a replication is sized from."""
    sizes = {p.name for p in function.params if not p.is_buffer and p.type.kind == "int"}
    sizes |= set(function.shape_symbols)
    return not any(not isinstance(n, SIZE_EXPRESSIONS) or isinstance(n, Intrinsic) and
                   n.name not in ("min", "max") or isinstance(n, Var) and n.name not in sizes
                   for n in walk((loop.start, loop.stop)))


def _parallel_outward(loop: For, function: KernelFunction, module: Module, cores: int = 0
                      ) -> For:
    """``loop``; or, where its iterations share what they write, the
    perfect nest it heads with a loop further in whose iterations share
    nothing swapped outwards, one loop at a time where each swap is legal
    (loop_interchange.py), when two loops at least are left inside it:
    trmm's columns, around its rows (each reading the rows after it) and
    their steps. With one loop inside, one core walking rows beat the
    cores walking columns (atax's ``y[j] += A[i, j] * tmp[i]``, 4096^2 on
    2 cores: 5.2 -> 5.6 ms): the nest as written over strips of the
    inner loop's iterations, one for each of ``cores`` (above 1), where
    it walks its arrays along that loop (strip_instances.py)."""
    moved = _swapped_outward(loop, function, module)
    if moved is loop:
        return loop
    deep = any(isinstance(n, For) and any(isinstance(m, For) for m in walk(n.body))
               for n in moved.body)
    return moved if deep else cores > 1 and in_strips(loop, function, cores) or loop


def _swapped_outward(loop: For, function: KernelFunction, module: Module) -> For:
    if sharing_problem(loop, module) is None or len(loop.body) != 1 or \
            not isinstance(loop.body[0], For):
        return loop
    inner = _swapped_outward(loop.body[0], function, module)
    nest = dataclasses.replace(loop, body=(inner,))
    if sharing_problem(inner, module) or interchange_problem(nest, function, module):
        return loop
    return swapped(nest)


def _as_instances(module: Module, graph: Graph, node: Node, loop: For) -> Module:
    """``node`` running ``loop`` (its last loop as _parallel_outward
    gives it) as instances."""
    function = module.function(node.body.function)
    return _with_function(module, graph, node, (*function.body[:-1], _position(loop, 0),
                                                *promoted(loop.body, function)),
                          (trip_count(loop),))


def _nested(module: Module, graph: Graph, node: Node, outer: For,
            nest: tuple[Stmt, ...]) -> tuple[Module, Node]:
    """The module with ``node``'s two loops (``outer`` and the one at its
    end, as _columns_outward gives them) as instances of two dimensions
    running ``nest`` (_nest_body: the inner loop's body, the elements it
    updates kept in variables); and the new node."""
    function = module.function(node.body.function)
    inner = _boxed(outer)[0].body[-1]
    body = (*function.body[:-1], _position(outer, 0), *outer.body[:-1], _position(inner, 1),
            *nest)
    module = _with_function(module, graph, node, body, (trip_count(outer), trip_count(inner)))
    return module, next(n for n in module.graph(graph.name).nodes if n.name == node.name)


def _boxed(outer: For) -> tuple[For, Box | None]:
    """``outer`` with its last loop over the box around the triangle its
    bounds make (triangle_boxes.py), and the box; ``outer`` and None where
    they make none."""
    inner = outer.body[-1] if outer.body else None
    if not isinstance(inner, For) or not reads_variable((inner.start, inner.stop), outer.var):
        return outer, None
    found = box(outer, inner)
    if isinstance(found, str):
        return outer, None
    return dataclasses.replace(outer, body=(*outer.body[:-1], found.loop)), found


def _nest_body(outer: For, function: KernelFunction) -> tuple[Stmt, ...] | str:
    """The body of an instance of the nest: the inner loop's, its elements
    kept in variables, its stores guarded to the triangle where its bounds
    make one; or why that would not compute the same."""
    inner = outer.body[-1]
    body = promoted(inner.body, function)
    found = _boxed(outer)[1]
    return body if found is None else guarded(body, outer, inner, found.guard)


def _columns_outward(outer: For, function: KernelFunction, module: Module) -> For:
    """``outer`` with its body as values and one loop where it can be: each
    perfect nest of two loops in it swapped where legal (``for k: for j:``
    becomes ``for j: for k:``), then adjacent loops fused where legal
    (loop_fusion.py), as PolyBench 4.2 writes a product's row (``for j:
    c[i, j] *= s`` and ``for k: for j: c[i, j] += a[i, k] * b[k, j]``);
    ``outer`` itself where that does not give one loop."""
    if _loop_problem(_boxed(outer)[0].body, function) is None:
        return outer
    body = tuple(swapped(s) if isinstance(s, For) and len(s.body) == 1 and
                 isinstance(s.body[0], For) and interchange_problem(s, function, module) is None
                 else s for s in outer.body)
    candidate = dataclasses.replace(outer, body=fused(body, function))
    return candidate if _loop_problem(_boxed(candidate)[0].body, function) is None else outer


def _as_nest_instances(module: Module, graph: Graph, node: Node) -> Module:
    function = module.function(node.body.function)
    outer = _columns_outward(function.body[-1], function, module)
    return _nested(module, graph, node, outer, _nest_body(outer, function))[0]


def _position(loop: For, dim: int) -> Let:
    """The loop's variable as the instance's position along ``dim``."""
    return Let(loop.var, I64, offset(as_i64(loop.start), InstanceId(dim), 1))


def _with_function(module: Module, graph: Graph, node: Node, body: tuple[Stmt, ...],
                   replication: tuple) -> Module:
    function = module.function(node.body.function)
    name = unique_name(f"{function.name}_instances", module.functions)
    new = dataclasses.replace(function, name=name, body=body)
    rewritten = dataclasses.replace(node, body=KernelBody(name), replication=replication)
    return dataclasses.replace(module, functions={**module.functions, name: new},
                               graphs={**module.graphs,
                                       graph.name: replace_node(graph, rewritten)})
