"""The IR verifier: every rule a well-formed module obeys, checked at once.

    from hpvm.ir.verify import check, verify
    problems = check(module)      # list[Diagnostic], empty when valid
    verify(module)                # raises VerificationError with all of them

Each diagnostic names where the problem is (graph, node, port, function)
and how to fix it.  The rules live in verify_graph (graphs, edges,
bindings), verify_node (one node: body, replication, attributes,
constants), verify_tensor (tensor-op nodes) and verify_kernel /
verify_expr (the kernel type checker); verify_common holds what they
share.
"""
from __future__ import annotations

from ..errors import Diagnostic, VerificationError
from .graph import KernelBody, Module
from .kernel import KernelFunction
from .verify_common import Report
from .verify_graph import check_graphs
from .verify_kernel import check_functions
from .verify_node import check_node_kernel


def check(module: Module) -> list[Diagnostic]:
    """All problems of ``module``, in a stable order (empty when valid)."""
    report = Report()
    if not isinstance(module, Module):
        report.error(f"expected a Module, got {type(module).__name__}",
                     "pass an hpvm.ir.Module")
        return report.diagnostics
    users = function_users(module)
    check_graphs(module, report)
    check_functions(module, report, users)
    for name, places in users.items():
        function = module.functions.get(name)
        if isinstance(function, KernelFunction):
            graph, node = places[0]
            check_node_kernel(function, report.at(graph=graph, node=node,
                                                  function=name))
    return _unique(report.diagnostics)


def verify(module: Module) -> None:
    """Raise VerificationError carrying every problem of ``module``."""
    diagnostics = check(module)
    if diagnostics:
        raise VerificationError(diagnostics)


def function_users(module: Module) -> dict[str, list[tuple[str, str]]]:
    """Function name -> the (graph, node) pairs whose KernelBody runs it."""
    users: dict[str, list[tuple[str, str]]] = {}
    for key, graph in module.graphs.items():
        for node in getattr(graph, "nodes", ()):
            if isinstance(node.body, KernelBody):
                users.setdefault(node.body.function, []).append(
                    (getattr(graph, "name", key), node.name))
    return users


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Drop exact repeats (a rule reached twice through shared helpers)."""
    seen, unique = set(), []
    for diagnostic in diagnostics:
        if diagnostic not in seen:
            seen.add(diagnostic)
            unique.append(diagnostic)
    return unique
