"""A cursor over tokens with the small readers every part of the parser
shares: names, literals, types, parameters and attribute dictionaries."""
from __future__ import annotations

import difflib
import math

from ...errors import ParseError
from ..parameter import DIRECTIONS, Parameter
from ..types import SCALAR_TYPES, BufferType, ScalarType
from .lexer import Token, parse_error
from .syntax import RESERVED


def suggestion(name: str, candidates) -> str:
    """``did you mean 'x'?`` for the closest candidate, or ''."""
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"did you mean '{close[0]}'?" if close else ""


class TokenStream:
    """Tokens plus a position; every reader raises ParseError at the
    offending token, saying what was expected."""

    def __init__(self, tokens: list[Token], filename: str | None):
        self.tokens = tokens
        self.filename = filename
        self.pos = 0

    # ------------------------------------------------------------ cursor
    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def at(self, kind: str, value: str | None = None, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token.kind == kind and (value is None or token.value == value)

    def at_op(self, value: str, offset: int = 0) -> bool:
        return self.at("op", value, offset)

    def at_word(self, word: str, offset: int = 0) -> bool:
        return self.at("name", word, offset)

    def accept_op(self, value: str) -> Token | None:
        return self.next() if self.at_op(value) else None

    def accept_word(self, word: str) -> Token | None:
        return self.next() if self.at_word(word) else None

    def error(self, token: Token, message: str, fix: str = ""):
        return parse_error(self.filename, token.line, token.column, message, fix)

    def expected(self, what: str, fix: str = ""):
        """ParseError 'expected WHAT, found TOKEN' at the current token."""
        token = self.peek()
        return self.error(token, f"expected {what}, found {token.describe()}", fix)

    def expect_op(self, value: str, fix: str = "") -> Token:
        if not self.at_op(value):
            raise self.expected(f"'{value}'", fix)
        return self.next()

    def expect_word(self, word: str, fix: str = "") -> Token:
        if not self.at_word(word):
            raise self.expected(f"'{word}'", fix)
        return self.next()

    def skip_line_breaks(self) -> None:
        while self.at("newline"):
            self.next()

    def delimited(self, open: str, close: str, read_item, what: str) -> list:
        """Items read by ``read_item()`` between ``open`` and ``close``,
        separated by ','; lines may break after the opener and commas."""
        self.expect_op(open)
        items = []
        self.skip_line_breaks()
        while not self.at_op(close):
            items.append(read_item())
            self.skip_line_breaks()
            if not self.accept_op(","):
                break
            self.skip_line_breaks()
        self.expect_op(close, f"separate {what} with ','")
        return items

    def skip_newlines(self) -> None:
        while self.at("newline") or self.at_op(";"):
            self.next()

    def end_statement(self) -> None:
        """A statement ends at a line end, ';', '}' or the end of file."""
        if self.at("newline") or self.at_op(";"):
            self.skip_newlines()
        elif not (self.at_op("}") or self.at("eof")):
            raise self.expected("end of line", "put one statement per line")

    # ----------------------------------------------------------- names
    def at_name(self, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token.kind == "qname" or (token.kind == "name" and token.value not in RESERVED)

    def name(self, what: str = "a name") -> str:
        token = self.peek()
        if token.kind == "name" and token.value in RESERVED:
            raise self.error(token, f"'{token.value}' is a reserved word, not {what}",
                             f'write %"{token.value}" to use it as a name')
        if token.kind not in ("name", "qname"):
            raise self.expected(what)
        return self.next().value

    def global_name(self, what: str) -> str:
        if not self.at("global"):
            raise self.expected(f"{what} ('@name')")
        return self.next().value

    # -------------------------------------------------------- literals
    def int_literal(self, what: str = "an integer") -> int:
        negative = self.accept_op("-") is not None
        if not self.at("int"):
            raise self.expected(what)
        value = int(self.next().value)
        return -value if negative else value

    def number(self) -> int | float:
        """A signed int or float literal, or inf / -inf / nan."""
        negative = self.accept_op("-") is not None
        token = self.peek()
        if token.kind == "int":
            value = int(token.value)
        elif token.kind == "float":
            value = float(token.value)
        elif token.kind == "name" and token.value in ("inf", "nan"):
            value = math.inf if token.value == "inf" else math.nan
        else:
            raise self.expected("a number")
        self.next()
        return -value if negative else value

    def string(self, what: str = "a string") -> str:
        if not self.at("string"):
            raise self.expected(what)
        return self.next().value

    # ----------------------------------------------------------- types
    def scalar_type(self) -> ScalarType:
        token = self.peek()
        if token.kind != "name" or token.value not in SCALAR_TYPES:
            raise self.expected("a scalar type", "use one of " + ", ".join(SCALAR_TYPES))
        return SCALAR_TYPES[self.next().value]

    def type(self):
        """``T`` or ``T[*]`` or ``T[d, ...]`` with int or symbol dims."""
        element = self.scalar_type()
        if not self.at_op("["):
            return element
        if self.at_op("*", 1):
            self.next()
            self.next()
            self.expect_op("]")
            return BufferType(element, None)
        dims = self.delimited("[", "]", self.dim, "dimensions")
        return BufferType(element, tuple(dims))

    def dim(self):
        if self.at_name():
            return self.name("a dimension")
        return self.int_literal("a dimension (an integer or a shape symbol)")

    def param(self) -> Parameter:
        """``[direction] [restrict] name: type``."""
        direction = "in"
        if self.peek().kind == "name" and self.peek().value in DIRECTIONS \
                and not self.at_op(":", 1):
            direction = self.next().value
        restrict = False
        if self.at_word("restrict") and not self.at_op(":", 1):
            self.next()
            restrict = True
        name = self.name("a parameter name")
        self.expect_op(":", "write 'name: type'")
        return Parameter(name, self.type(), direction, restrict)

    def params(self) -> tuple[Parameter, ...]:
        """``(param, ...)``; duplicate names are refused."""
        params: list[Parameter] = []

        def read() -> Parameter:
            token = self.peek()
            param = self.param()
            if any(p.name == param.name for p in params):
                raise self.error(token, f"parameter '{param.name}' is declared twice",
                                 "give each parameter its own name")
            params.append(param)
            return param
        return tuple(self.delimited("(", ")", read, "parameters"))

    # ------------------------------------------------------ attributes
    def attr_value(self):
        if self.at_word("true") or self.at_word("false"):
            return self.next().value == "true"
        if self.at("string"):
            return self.next().value
        if self.at_op("["):
            return tuple(self.delimited("[", "]", self.attr_value, "list items"))
        try:
            return self.number()
        except ParseError:
            raise self.expected("an attribute value (number, string, true, "
                                "false or [list])") from None

    def attrs(self) -> dict:
        """``{key = value, ...}``."""
        attrs: dict = {}

        def read() -> None:
            token = self.peek()
            key = self.name("an attribute name")
            if key in attrs:
                raise self.error(token, f"attribute '{key}' is given twice", "keep one")
            self.expect_op("=", "write 'key = value'")
            attrs[key] = self.attr_value()
        self.delimited("{", "}", read, "attributes")
        return attrs
