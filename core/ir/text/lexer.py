"""Tokens of the ``.hpvm`` text form.

``tokenize(text, filename)`` returns a list of :class:`Token` ending with an
``eof`` token.  Newlines are tokens: statements end at a line end (the
parser lets lists break after '(', '[', '{' and ',').  ``#`` starts a
comment that runs to the end of the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import Diagnostic, Location, ParseError


@dataclass(frozen=True)
class Token:
    """``kind``: name, qname (``%"..."``), global (``@name``), int, float,
    string, op, newline or eof.  ``value`` is the text, unescaped for
    quoted forms and strings."""

    kind: str
    value: str
    line: int
    column: int

    def describe(self) -> str:
        """The token as an error message names it."""
        if self.kind == "eof":
            return "end of file"
        if self.kind == "newline":
            return "end of line"
        if self.kind == "string":
            return "a string"
        if self.kind == "global":
            return f"'@{self.value}'"
        return f"'{self.value}'"


_OPERATORS = sorted([
    "->", "..", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "(", ")", "[", "]", "{", "}", ",", ":", ";", "=", ".", "+", "-", "*", "/",
    "%", "&", "|", "^", "<", ">", "!", "~",
], key=len, reverse=True)
_PATTERNS = [
    ("space", r"[ \t\r]+"),
    ("comment", r"#[^\n]*"),
    ("newline", r"\n"),
    ("float", r"\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"),
    ("int", r"\d+"),
    ("name", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("qname", r'%"'),
    ("global", r'@"|@[A-Za-z_][A-Za-z0-9_]*'),
    ("string", r'"'),
    ("op", "|".join(re.escape(op) for op in _OPERATORS)),
]
_TOKEN = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _PATTERNS))
_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


def parse_error(filename: str | None, line: int, column: int, message: str,
                fix: str = "") -> ParseError:
    """A ParseError located at ``filename:line:column``."""
    return ParseError(Diagnostic(Location(file=filename, line=line, column=column),
                                 message, fix))


class _Lexer:
    def __init__(self, text: str, filename: str | None):
        self.text = text
        self.filename = filename
        self.pos = 0
        self.line = 1
        self.line_start = 0
        self.tokens: list[Token] = []

    @property
    def column(self) -> int:
        return self.pos - self.line_start + 1

    def error(self, message: str, fix: str = "") -> ParseError:
        return parse_error(self.filename, self.line, self.column, message, fix)

    def run(self) -> list[Token]:
        while self.pos < len(self.text):
            match = _TOKEN.match(self.text, self.pos)
            if match is None:
                raise self.error(f"unexpected character {self.text[self.pos]!r}",
                                 "remove it; names are letters, digits and '_', "
                                 "other names are written %\"quoted\"")
            self.step(match.lastgroup, match.group())
        self.tokens.append(Token("eof", "", self.line, self.column))
        return self.tokens

    def step(self, kind: str, text: str) -> None:
        line, column = self.line, self.column
        if kind in ("space", "comment"):
            self.pos += len(text)
            return
        if kind == "newline":
            self.pos += 1
            self.tokens.append(Token("newline", "\n", line, column))
            self.line += 1
            self.line_start = self.pos
            return
        if kind in ("qname", "string") or text == '@"':
            self.pos += len(text) - 1
            value = self.read_string()
            kind = "global" if text == '@"' else kind
        else:
            self.pos += len(text)
            value = text[1:] if kind == "global" else text
        self.tokens.append(Token(kind, value, line, column))

    def read_string(self) -> str:
        """Read a double-quoted string starting at ``self.pos``."""
        start_column = self.column
        self.pos += 1
        chars = []
        while True:
            # Plain characters in one slice (constants' base64 runs are long).
            plain = _PLAIN_STRING.match(self.text, self.pos)
            chars.append(plain.group())
            self.pos = plain.end()
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise parse_error(self.filename, self.line, start_column,
                                  "unterminated string", 'close it with " on the same line')
            if self.text[self.pos] == '"':
                self.pos += 1
                return "".join(chars)
            chars.append(self.read_escape())

    def read_escape(self) -> str:
        text = self.text
        code = text[self.pos + 1:self.pos + 2]
        if code in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[code]
        match = re.compile(r"u\{([0-9a-fA-F]{1,6})\}").match(text, self.pos + 1)
        if match and int(match.group(1), 16) <= 0x10FFFF:
            self.pos = match.end()
            return chr(int(match.group(1), 16))
        raise self.error(f"unknown escape '\\{code}' in a string",
                         'use \\\\, \\", \\n, \\t, \\r or \\u{HEX}')


_PLAIN_STRING = re.compile(r'[^"\\\n]*')


def tokenize(text: str, filename: str | None = None) -> list[Token]:
    """The tokens of ``text``; ParseError (with line and column) on a
    character that starts no token or a malformed string."""
    return _Lexer(text, filename).run()
