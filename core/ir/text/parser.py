"""Parsing of the ``.hpvm`` text form into a Module.

``parse_module(text, filename)`` reads a whole module; ``load_module(path)``
reads a file.  Every syntax problem raises ParseError located at the
offending token (file, line, column) saying what was expected.  Functions
and graphs may appear in any order: their signatures are read first.
"""
from __future__ import annotations

import base64
import binascii
import math
from pathlib import Path

import numpy as np

from ...errors import Diagnostic, Location, ParseError
from ..graph import (
    EDGE_KINDS, FORMAT_VERSION, BindIn, BindOut, ConstantBody, Edge, Graph,
    GraphBody, KernelBody, Module, Node, TensorBody,
)
from ..kernel import KernelFunction
from ..types import BufferType
from .kernel_parser import KernelParser, Scope, scope_of_params
from .lexer import tokenize
from .stream import TokenStream, suggestion


class _ModuleParser:
    def __init__(self, text: str, filename: str | None):
        self.s = TokenStream(tokenize(text, filename), filename)
        self.functions: dict[str, KernelFunction] = {}
        self.graph_params: dict[str, tuple] = {}
        self.kernels = KernelParser(self.s, self.functions)

    # ---------------------------------------------------------- module
    def module(self) -> Module:
        s = self.s
        s.skip_newlines()
        version = self.header()
        s.end_statement()
        s.expect_word("module", "the second line is 'module NAME'")
        name = s.name("a module name")
        s.end_statement()
        start = s.pos
        self.scan_signatures()
        s.pos = start
        functions, graphs, root = {}, {}, None
        while not s.at("eof"):
            if s.accept_word("func"):
                function = self.function()
                functions[function.name] = function
            elif s.accept_word("graph"):
                graph = self.graph()
                graphs[graph.name] = graph
            else:
                s.expect_word("root")
                root_token = s.peek()
                root = s.global_name("the root graph")
                if root not in self.graph_params:
                    raise s.error(root_token, f"root graph '@{root}' is not defined",
                                  suggestion(root, self.graph_params) or
                                  "define it with 'graph @name(...) { ... }'")
            s.end_statement()
        if root is None:
            raise s.expected("'root @graph'", "end the module with 'root @main'")
        return Module(name, functions, graphs, root, version)

    def header(self) -> tuple[int, int]:
        s = self.s
        s.expect_word("hpvm", f"the first line is 'hpvm {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]}'")
        token = s.peek()
        if token.kind != "float" or "e" in token.value.lower():
            raise s.expected("a format version MAJOR.MINOR")
        s.next()
        major, minor = (int(part) for part in token.value.split("."))
        if major != FORMAT_VERSION[0]:
            raise s.error(token, f"this module is in HPVM text format {major}.{minor}, but "
                                 f"this reader supports format {FORMAT_VERSION[0]}.x "
                                 f"(current {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]})",
                          f"use an hpvm release that reads format {major}.x")
        return major, minor

    def scan_signatures(self) -> None:
        """Read every function and graph signature, skipping the bodies."""
        s = self.s
        roots = []
        while not s.at("eof"):
            if s.accept_word("func"):
                token = s.peek()
                signature = self.signature()
                self._add_unique(self.functions, signature.name, signature, token, "function")
            elif s.accept_word("graph"):
                token = s.peek()
                name = s.global_name("a graph name")
                self._add_unique(self.graph_params, name, s.params(), token, "graph")
            elif s.at_word("root"):
                if roots:
                    raise s.error(s.peek(), "the root graph is named twice", "keep one 'root' line")
                roots.append(s.next())
                s.global_name("the root graph")
                s.end_statement()
                continue
            else:
                raise s.expected("'func', 'graph' or 'root'")
            self.skip_block()
            s.end_statement()

    def _add_unique(self, table: dict, name: str, value, token, what: str) -> None:
        if name in table:
            raise self.s.error(token, f"{what} '@{name}' is defined twice",
                               "rename one of them")
        table[name] = value

    def skip_block(self) -> None:
        s = self.s
        opening = s.expect_op("{")
        depth = 1
        while depth:
            token = s.next()
            if token.kind == "eof":
                raise s.error(opening, "this '{' is never closed", "add the matching '}'")
            if token.kind == "op" and token.value in "{}":
                depth += 1 if token.value == "{" else -1

    # -------------------------------------------------------- functions
    def signature(self) -> KernelFunction:
        s = self.s
        name = s.global_name("a function name")
        params = s.params()
        return_type = s.scalar_type() if s.accept_op("->") else None
        return KernelFunction(name, params, (), return_type)

    def function(self) -> KernelFunction:
        return self.kernels.function_body(self.signature())

    # ----------------------------------------------------------- graphs
    def graph(self) -> Graph:
        s = self.s
        name = s.global_name("a graph name")
        params = s.params()
        s.expect_op("{")
        s.skip_newlines()
        nodes, edges, bind_ins, bind_outs = [], [], [], []
        while not s.at_op("}"):
            token = s.peek()
            if s.accept_word("node"):
                node = self.node()
                if any(n.name == node.name for n in nodes):
                    raise s.error(token, f"node '{node.name}' is defined twice in "
                                         f"graph '@{name}'", "rename one of them")
                nodes.append(node)
            elif s.accept_word("edge"):
                edges.append(self.edge())
            elif s.accept_word("in"):
                param = s.name("a graph parameter")
                s.expect_op("->", "write 'in param -> node.port'")
                bind_ins.append(BindIn(param, *self.port_ref(), self.stream_flag()))
            elif s.accept_word("out"):
                source = self.port_ref()
                s.expect_op("->", "write 'out node.port -> param'")
                param = s.name("a graph parameter")
                bind_outs.append(BindOut(*source, param, self.stream_flag()))
            else:
                raise s.expected("'node', 'edge', 'in', 'out' or '}'")
            s.end_statement()
        s.next()
        return Graph(name, params, tuple(nodes), tuple(edges), tuple(bind_ins),
                     tuple(bind_outs))

    def port_ref(self) -> tuple[str, str]:
        node = self.s.name("a node name")
        self.s.expect_op(".", "write 'node.port'")
        return node, self.s.name("a port name")

    def stream_flag(self) -> bool:
        return self.s.accept_word("stream") is not None

    def edge(self) -> Edge:
        s = self.s
        source = self.port_ref()
        s.expect_op("->", "write 'edge a.port -> b.port all-to-all'")
        target = self.port_ref()
        kind = "all-to-all"
        token = s.peek()
        if token.kind == "name" and token.value != "stream":
            words = [s.next().value]
            while s.at_op("-") and s.at("name", offset=1):
                s.next()
                words.append(s.next().value)
            kind = "-".join(words)
            if kind not in EDGE_KINDS:
                raise s.error(token, f"unknown edge kind '{kind}'",
                              "use " + " or ".join(EDGE_KINDS))
        return Edge(*source, *target, kind, self.stream_flag())

    # ------------------------------------------------------------ nodes
    def node(self) -> Node:
        s = self.s
        name = s.name("a node name")
        s.expect_op("=", "write 'node name = @function [sizes]'")
        body, params = self.node_body()
        replication = ()
        if s.at_op("["):
            self.kernels.scope = Scope(scope_of_params(params))
            replication = self.kernels.indices()
        hint = s.name("a target name") if s.accept_word("hint") else None
        attributes = s.attrs() if s.at_op("{") else {}
        return Node(name, body, replication, hint, attributes)

    def node_body(self):
        """The body after 'node name =' and the ports it gives the node."""
        s = self.s
        token = s.peek()
        if token.kind == "global":
            name = s.next().value
            return KernelBody(name), self._lookup(self.functions, token, "function").params
        if s.accept_word("graph"):
            graph_token = s.peek()
            name = s.global_name("a graph name")
            return GraphBody(name), self._lookup(self.graph_params, graph_token, "graph")
        if s.accept_word("const"):
            body = self.constant()
            return body, body.params
        if s.at_name() and s.at_op("(", 1):
            op = s.name()
            params = s.params()
            attrs = s.attrs() if s.at_op("{") else {}
            return TensorBody(op, params, attrs), params
        raise s.expected("a node body: @function, graph @name, const TYPE base64 \"...\" "
                         "or a tensor op such as conv2d(...)")

    def _lookup(self, table: dict, token, what: str):
        if token.value not in table:
            raise self.s.error(token, f"unknown {what} '@{token.value}'",
                               suggestion(token.value, table) or
                               f"define {what} '@{token.value}' in this module")
        return table[token.value]

    def constant(self) -> ConstantBody:
        s = self.s
        type_token = s.peek()
        type = s.type()
        if not isinstance(type, BufferType):
            raise s.error(type_token, "a constant needs a buffer type", "write f32[2, 2]")
        s.expect_word("base64", 'write const f32[2] base64 "..."')
        data_token = s.peek()
        text = s.string("base64 data in quotes")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise s.error(data_token, "invalid base64 data") from None
        dtype = type.element.numpy_dtype
        if len(raw) % dtype.itemsize:
            raise s.error(data_token, f"{len(raw)} bytes are not a whole number of "
                                      f"{type.element} values")
        data = np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype)
        return ConstantBody(type, data.reshape(self._constant_shape(type, data, data_token)))

    def _constant_shape(self, type: BufferType, data: np.ndarray, token) -> tuple[int, ...]:
        s = self.s
        if s.accept_word("shape"):
            shape = tuple(s.delimited("[", "]", s.int_literal, "dimensions"))
        elif type.shape is None:
            shape = (data.size,)
        elif all(isinstance(d, int) for d in type.shape):
            shape = type.shape
        else:
            raise s.error(token, f"constant of type {type} has symbolic dims",
                          "give the type fixed dims or add 'shape [2, 2]'")
        if math.prod(shape) != data.size:
            raise s.error(token, f"the data holds {data.size} values but shape "
                                 f"{list(shape)} needs {math.prod(shape)}")
        return shape


def parse_module(text: str, filename: str | None = None) -> Module:
    """The Module written in ``text``; ParseError (naming ``filename``, or
    ``<text>`` when None, with line and column) if it is not valid ``.hpvm``
    text."""
    return _ModuleParser(text, filename or "<text>").module()


def load_module(path) -> Module:
    """Read and parse the ``.hpvm`` file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ParseError(Diagnostic(Location(file=str(path)), f"cannot read the file: {error}",
                                    "check the path and that it is UTF-8 text")) from None
    return parse_module(text, str(path))
