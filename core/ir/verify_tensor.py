"""Checks of tensor-op nodes against hpvm.ir.tensor_ops: the op exists, the
ports and attributes are the op's, and the declared output types are what
the op's shape inference gives.

The registry is imported when a tensor node is checked; while it is not
importable the checks are skipped (the rest of the verifier still runs).
"""
from __future__ import annotations

from ..errors import DiagnosticError
from .graph import Node
from .tensor_ops import TENSOR_OPS
from .types import BufferType
from .verify_common import Report, quoted


def check_tensor_node(node: Node, report: Report) -> None:
    """Check tensor node ``node`` (``report`` already names it)."""
    body = node.body
    spec = TENSOR_OPS.get(body.op)
    if spec is None:
        report.error(f"node '{node.name}' uses unknown tensor op '{body.op}'",
                     f"use one of {quoted(sorted(TENSOR_OPS))}")
        return
    ports = {p.name: p for p in body.params}
    before = len(report.diagnostics)
    _check_ports(node, spec, ports, report)
    _check_attribute_names(spec, body.attrs, report)
    if len(report.diagnostics) == before:  # inference would repeat them
        _check_inferred_types(node, spec, ports, report)


def _is_input(spec, port: str) -> bool:
    """True if ``port`` is an input of ``spec`` (``x<k>`` of variadic ops)."""
    is_input_port = getattr(spec, "is_input_port", None)
    if is_input_port is not None:
        return is_input_port(port)
    return port in spec.inputs or port in spec.optional_inputs


def _check_ports(node: Node, spec, ports, report: Report) -> None:
    for name in spec.inputs:
        if name not in ports:
            report.error(f"tensor op '{spec.name}' of node '{node.name}' needs "
                         f"input '{name}'", f"add an in port '{name}'", port=name)
    for name in spec.outputs:
        if name not in ports:
            report.error(f"tensor op '{spec.name}' of node '{node.name}' "
                         f"produces '{name}' but has no port for it",
                         f"add an out port '{name}'", port=name)
    known = tuple(spec.inputs) + tuple(spec.optional_inputs) + tuple(spec.outputs)
    for name, port in ports.items():
        expected = "out" if name in spec.outputs else "in" if _is_input(spec, name) else None
        if expected is None:
            report.error(f"tensor op '{spec.name}' has no port '{name}'",
                         f"use its ports {quoted(known)}", port=name)
        elif port.direction != expected:
            report.error(f"port '{name}' of tensor op '{spec.name}' must be "
                         f"'{expected}', not '{port.direction}'",
                         f"make it direction '{expected}'", port=name)
        elif not isinstance(port.type, BufferType) or port.type.shape is None:
            report.error(f"port '{name}' of tensor op '{spec.name}' is "
                         f"{port.type}; tensor ports are shaped buffers",
                         "give it a shaped buffer type such as f32[N, 16]",
                         port=name)


def _check_attribute_names(spec, attrs, report: Report) -> None:
    if not isinstance(attrs, dict):
        return  # reported with the attribute values
    for key in attrs:
        if key not in spec.attrs:
            report.error(f"tensor op '{spec.name}' has no attribute '{key}'",
                         f"use one of {quoted(spec.attrs)}")


def _check_inferred_types(node: Node, spec, ports, report: Report) -> None:
    """Declared outputs must be exactly what inference gives: symbols pass
    through inference, so a different name is a different size."""
    inputs = {n: p.type for n, p in ports.items() if p.direction == "in"}
    try:
        inferred = spec.infer(inputs, node.body.attrs)
    except DiagnosticError as error:
        for diagnostic in error.diagnostics:
            report.error(f"tensor op '{spec.name}' rejects its inputs: "
                         f"{diagnostic.message}", diagnostic.fix,
                         port=diagnostic.location.port)
        return
    except Exception as error:  # a foreign op's own message still helps
        report.error(f"tensor op '{spec.name}' rejects its inputs: {error}",
                     "fix the input port types or the attributes")
        return
    for name, expected in inferred.items():
        port = ports.get(name)
        if port is not None and port.type != expected:
            report.error(
                f"output '{name}' of '{spec.name}' is declared {port.type} but "
                f"the op infers {expected}", f"declare '{name}' as {expected}",
                port=name)
