"""Canonical printing of HPVM IR to the ``.hpvm`` text form.

``print_module(module)`` gives the text ``parse_module`` reads back into an
equal module; ``print_expr`` and ``print_stmts`` print pieces of kernel IR
(for messages and tests).  The grammar is in docs/text-format.md.
"""
from __future__ import annotations

import base64

import numpy as np

from ..graph import ConstantBody, Graph, GraphBody, KernelBody, Module, Node, TensorBody
from ..kernel import (
    ArrayDecl, Assign, AtomicUpdate, Barrier, Binary, Bitcast, Call, Cast, Compare, Const,
    Expr, ExprStmt, For, If, InstanceCount, InstanceId, Intrinsic, KernelFunction,
    Let, Load, Return, Select, Stmt, Store, Unary, Var, While,
)
from ..parameter import Parameter
from ..types import F64, I64, BufferType
from .syntax import (
    BINARY_SPELLING, COMPARE_SPELLING, PRECEDENCE, PRIMARY_PRECEDENCE,
    UNARY_PRECEDENCE, UNARY_SPELLING, format_float, format_global, format_name,
    quote_string,
)

INDENT = "  "


# ---------------------------------------------------------------- literals

def format_constant(const: Const) -> str:
    """A constant: ``true``, bare i64 (``-1``) and finite f64 (``0.5``),
    every other type as ``T(value)``."""
    t, value = const.type, const.value
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        text = format_float(value, t)
        if t == F64 and text not in ("inf", "-inf", "nan"):
            return text
        return f"{t}({text})"
    return str(value) if t == I64 else f"{t}({value})"


def _is_bare_literal(expr: Expr) -> bool:
    return isinstance(expr, Const) and format_constant(expr)[0] in "-0123456789"


def format_type(t) -> str:
    if isinstance(t, BufferType):
        if t.shape is None:
            return f"{t.element}[*]"
        dims = ", ".join(format_name(d) if isinstance(d, str) else str(d) for d in t.shape)
        return f"{t.element}[{dims}]"
    return str(t)


def format_attr_value(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_float(float(value))
    if isinstance(value, str):
        return quote_string(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    raise ValueError(f"attribute value {value!r} cannot be printed; use a bool, "
                     f"int, float, str or a tuple of them")


def format_attrs(attrs: dict) -> str:
    """``{key = value, ...}`` with keys sorted."""
    items = (f"{format_name(k)} = {format_attr_value(attrs[k])}" for k in sorted(attrs))
    return "{" + ", ".join(items) + "}"


def format_param(p: Parameter) -> str:
    restrict = "restrict " if p.restrict else ""
    return f"{p.direction} {restrict}{format_name(p.name)}: {format_type(p.type)}"


def format_params(params) -> str:
    return "(" + ", ".join(format_param(p) for p in params) + ")"


# ------------------------------------------------------------- expressions

def _precedence(expr: Expr) -> int:
    if isinstance(expr, (Binary, Compare)):
        return PRECEDENCE.get(expr.op, PRIMARY_PRECEDENCE)
    if isinstance(expr, Unary):
        return UNARY_PRECEDENCE
    return PRIMARY_PRECEDENCE


def _operand(expr: Expr, min_precedence: int) -> str:
    text = print_expr(expr)
    return f"({text})" if _precedence(expr) < min_precedence else text


def _args(args) -> str:
    return ", ".join(print_expr(a) for a in args)


def _print_unary(expr: Unary) -> str:
    text = _operand(expr.operand, UNARY_PRECEDENCE)
    # "-1" reads as a literal and "--x" as two signs: keep both distinct.
    if expr.op == "neg" and text[:1] in "-0123456789":
        text = f"({text})"
    return UNARY_SPELLING.get(expr.op, f"<{expr.op}>") + text


def _print_binary(expr) -> str:
    spelling = {**BINARY_SPELLING, **COMPARE_SPELLING}.get(expr.op, f"<{expr.op}>")
    precedence = _precedence(expr)
    lhs = _operand(expr.lhs, precedence)
    rhs = _operand(expr.rhs, precedence + 1)
    return f"{lhs} {spelling} {rhs}"


def _print_cast(expr: Cast) -> str:
    inner = print_expr(expr.value)
    # T(literal) is a constant of type T; a converted literal gets parentheses.
    if _is_bare_literal(expr.value):
        inner = f"({inner})"
    return f"{expr.type}({inner})"


_EXPR_PRINTERS = {
    Const: format_constant,
    Var: lambda e: format_name(e.name),
    Unary: _print_unary,
    Binary: _print_binary,
    Compare: _print_binary,
    Select: lambda e: f"select({_args((e.cond, e.if_true, e.if_false))})",
    Cast: _print_cast,
    Bitcast: lambda e: f"bitcast({e.type}, {print_expr(e.value)})",
    Load: lambda e: f"{format_name(e.buffer)}[{_args(e.indices)}]",
    Intrinsic: lambda e: f"{e.name}({_args(e.args)})",
    InstanceId: lambda e: f"instance_id({e.dim})",
    InstanceCount: lambda e: f"instance_count({e.dim})",
    Call: lambda e: f"{format_global(e.function)}({_args(e.args)})",
}


def print_expr(expr: Expr) -> str:
    """``expr`` in infix form with only the parentheses the tree needs."""
    printer = _EXPR_PRINTERS.get(type(expr))
    if printer is None:
        return f"<{type(expr).__name__}>"
    return printer(expr)


# -------------------------------------------------------------- statements

def _block(body, depth: int) -> list[str]:
    """Lines of ``{ body }`` continuing the current line: the first element
    is appended to it."""
    if not body:
        return ["{}"]
    return ["{", *_stmt_lines(body, depth + 1), INDENT * depth + "}"]


def _join_header(header: str, block: list[str]) -> list[str]:
    return [header + " " + block[0], *block[1:]]


def _loop_attrs(stmt: For) -> str:
    items = []
    if stmt.unroll is not None:
        items.append(f"unroll = {stmt.unroll}")
    if stmt.ivdep:
        items.append("ivdep")
    if stmt.trip_count is not None:
        items.append(f"trip_count = {stmt.trip_count}")
    for reduction in stmt.reduce:
        identity = "" if reduction.identity is None else f" = {print_expr(reduction.identity)}"
        op = format_global(reduction.op[1:]) if reduction.op.startswith("@") else reduction.op
        items.append(f"reduce {format_name(reduction.var)}: {op}{identity}")
    return f" [{', '.join(items)}]" if items else ""


def _if_lines(stmt: If, depth: int, keyword: str = "if") -> list[str]:
    lines = _join_header(f"{keyword} {print_expr(stmt.cond)}", _block(stmt.then_body, depth))
    else_body = stmt.else_body
    if len(else_body) == 1 and isinstance(else_body[0], If):
        nested = _if_lines(else_body[0], depth, "else if")
        return lines[:-1] + [lines[-1] + " " + nested[0], *nested[1:]]
    if else_body:
        tail = _join_header("else", _block(else_body, depth))
        return lines[:-1] + [lines[-1] + " " + tail[0], *tail[1:]]
    return lines


def _simple_stmt(stmt: Stmt) -> str | None:
    """The one-line form of a statement without a body (None otherwise)."""
    if isinstance(stmt, Let):
        value = "" if stmt.value is None else f" = {print_expr(stmt.value)}"
        return f"let {format_name(stmt.name)}: {stmt.type}{value}"
    if isinstance(stmt, Assign):
        return f"{format_name(stmt.name)} = {print_expr(stmt.value)}"
    if isinstance(stmt, Store):
        return (f"{format_name(stmt.buffer)}[{_args(stmt.indices)}] = "
                f"{print_expr(stmt.value)}")
    if isinstance(stmt, ArrayDecl):
        shape = ", ".join(str(d) for d in stmt.shape)
        undefined = "" if stmt.zeroed else " = undef"
        return f"{stmt.space} {format_name(stmt.name)}: {stmt.element}[{shape}]{undefined}"
    if isinstance(stmt, AtomicUpdate):
        result = "" if stmt.result is None else f" -> {format_name(stmt.result)}"
        return (f"atomic_{stmt.op} {format_name(stmt.buffer)}[{_args(stmt.indices)}], "
                f"{print_expr(stmt.value)}{result}")
    if isinstance(stmt, Barrier):
        return "barrier"
    if isinstance(stmt, Return):
        return "return" if stmt.value is None else f"return {print_expr(stmt.value)}"
    if isinstance(stmt, ExprStmt):
        return print_expr(stmt.call)
    return None


def _stmt_lines(stmts, depth: int) -> list[str]:
    lines = []
    pad = INDENT * depth
    for stmt in stmts:
        simple = _simple_stmt(stmt)
        if simple is not None:
            body = [simple]
        elif isinstance(stmt, For):
            header = (f"for {format_name(stmt.var)} in {print_expr(stmt.start)} .. "
                      f"{print_expr(stmt.stop)} step {stmt.step}{_loop_attrs(stmt)}")
            body = _join_header(header, _block(stmt.body, depth))
        elif isinstance(stmt, While):
            body = _join_header(f"while {print_expr(stmt.cond)}", _block(stmt.body, depth))
        elif isinstance(stmt, If):
            body = _if_lines(stmt, depth)
        else:
            body = [f"<{type(stmt).__name__}>"]
        lines.append(pad + body[0])
        lines.extend(body[1:])
    return lines


def print_stmts(stmts, depth: int = 0) -> str:
    """Statements one per line, nested blocks indented by two spaces."""
    if isinstance(stmts, Stmt):
        stmts = (stmts,)
    return "\n".join(_stmt_lines(stmts, depth))


# ----------------------------------------------------------------- module

def _function_lines(function: KernelFunction) -> list[str]:
    returns = "" if function.return_type is None else f" -> {function.return_type}"
    header = f"func {format_global(function.name)}{format_params(function.params)}{returns}"
    return _join_header(header, _block(function.body, 0))


def _constant_text(body: ConstantBody) -> str:
    data = np.asarray(body.data)
    little_endian = body.type.element.numpy_dtype.newbyteorder("<")
    raw = data.astype(little_endian, copy=False).tobytes()
    text = f"const {format_type(body.type)} base64 \"{base64.b64encode(raw).decode()}\""
    shape = body.type.shape
    implied = (data.size,) if shape is None else shape
    if tuple(data.shape) != tuple(implied):
        text += f" shape [{', '.join(str(d) for d in data.shape)}]"
    return text


def _body_text(node: Node) -> str:
    body = node.body
    if isinstance(body, KernelBody):
        return format_global(body.function)
    if isinstance(body, GraphBody):
        return f"graph {format_global(body.graph)}"
    if isinstance(body, ConstantBody):
        return _constant_text(body)
    if isinstance(body, TensorBody):
        text = f"{format_name(body.op)}{format_params(body.params)}"
        # A tensor op's own attributes come first; print them (even empty)
        # whenever node attributes follow, so the two never get confused.
        if body.attrs or node.attributes:
            text += " " + format_attrs(body.attrs)
        return text
    return f"<{type(body).__name__}>"


def format_node(node: Node) -> str:
    text = f"node {format_name(node.name)} = {_body_text(node)}"
    if node.replication:
        text += f" [{_args(node.replication)}]"
    if node.hint is not None:
        text += f" hint {format_name(node.hint)}"
    if node.attributes:
        text += " " + format_attrs(node.attributes)
    return text


def _port(node: str, port: str) -> str:
    return f"{format_name(node)}.{format_name(port)}"


def _stream(flag: bool) -> str:
    return " stream" if flag else ""


def _graph_lines(graph: Graph) -> list[str]:
    items = [format_node(n) for n in graph.nodes]
    items += [f"edge {_port(e.src_node, e.src_port)} -> {_port(e.dst_node, e.dst_port)} "
              f"{e.kind}{_stream(e.streaming)}" for e in graph.edges]
    items += [f"in {format_name(b.param)} -> {_port(b.dst_node, b.dst_port)}"
              f"{_stream(b.streaming)}" for b in graph.bind_ins]
    items += [f"out {_port(b.src_node, b.src_port)} -> {format_name(b.param)}"
              f"{_stream(b.streaming)}" for b in graph.bind_outs]
    header = f"graph {format_global(graph.name)}{format_params(graph.params)}"
    if not items:
        return [header + " {}"]
    return [header + " {", *(INDENT + item for item in items), "}"]


def print_module(module: Module) -> str:
    """The canonical text of ``module``: header, functions, graphs, root."""
    major, minor = module.version
    sections = [[f"hpvm {major}.{minor}", f"module {format_name(module.name)}"]]
    sections += [_function_lines(f) for f in module.functions.values()]
    sections += [_graph_lines(g) for g in module.graphs.values()]
    sections.append([f"root {format_global(module.root)}"])
    return "\n\n".join("\n".join(section) for section in sections) + "\n"
