"""Pipeline text: ``"dce,const-fold,loop-unroll{factor=4}"``.

Grammar (whitespace allowed between tokens)::

    pipeline := [ pass ("," pass)* ]
    pass     := NAME [ "{" [ option ((" " | ",") option)* ] "}" ]
    option   := KEY "=" VALUE
    VALUE    := bare text | 'quoted' | "quoted"

A list option takes ``a,b,c``: bare values after a list option that are not
``key=value`` continue the list (``sequentialize{nodes=a,b}``).  Every error
is a PipelineError whose diagnostic gives the column and the fix.
"""
from __future__ import annotations

import difflib
import re
from typing import Any

from ..errors import Diagnostic, Location
from .errors import PipelineError
from .registry import Option, PassInfo, get_pass, pass_names

PipelineStep = tuple[str, dict[str, Any]]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_BARE_VALUE = re.compile(r"[^\s,{}='\"]+")


def parse_pipeline(text: str) -> list[PipelineStep]:
    """``text`` as a list of (pass name, options) with every declared
    option present (given values typed, others at their defaults)."""
    return _PipelineParser(text).parse()


def resolve_steps(steps) -> list[PipelineStep]:
    """Pipeline text or a list of (name, options) checked against the
    registry, with options typed and defaults filled in."""
    if isinstance(steps, str):
        return parse_pipeline(steps)
    resolved = []
    for name, options in steps:
        info = _lookup(name, Location())
        typed = info.defaults()
        for key, value in dict(options).items():
            option = _option(info, key, Location())
            typed[key] = _convert(info, option, value, Location())
        resolved.append((name, typed))
    return resolved


def format_pipeline(steps: list[PipelineStep]) -> str:
    """The pipeline text of ``steps``, listing options that differ from
    their defaults (inverse of parse_pipeline)."""
    parts = []
    for name, options in steps:
        info = get_pass(name)
        changed = [f"{k}={_format_value(v)}" for k, v in options.items()
                   if v != info.option(k).default]
        parts.append(name + ("{" + " ".join(changed) + "}" if changed else ""))
    return ",".join(parts)


def _format_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    text = str(value)
    return text if _BARE_VALUE.fullmatch(text) else repr(text)


def _at(column: int) -> Location:
    """Column ``column`` of the pipeline text (printed ``<pipeline>:1:column``)."""
    return Location(file="<pipeline>", line=1, column=column)


def _error(message: str, column: int, fix: str = "") -> PipelineError:
    return PipelineError(Diagnostic(_at(column), message, fix))


def _lookup(name: str, where: Location) -> PassInfo:
    try:
        return get_pass(name)
    except KeyError:
        known = pass_names()
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise PipelineError(Diagnostic(
            where, f"unknown pass '{name}'",
            f"{hint}known passes: {', '.join(known) or '(none)'}")) from None


def _option(info: PassInfo, key: str, where: Location) -> Option:
    try:
        return info.option(key)
    except KeyError:
        if not info.options:
            fix = f"pass '{info.name}' takes no options"
        else:
            described = ", ".join(
                f"{o.name} ({o.type_name}, default {_format_value(o.default) or 'empty'})"
                for o in info.options)
            fix = f"options of '{info.name}': {described}"
        raise PipelineError(Diagnostic(
            where, f"unknown option '{key}' of pass '{info.name}'", fix)) from None


def _convert(info: PassInfo, option: Option, value, where: Location):
    try:
        return option.convert(value)
    except ValueError as err:
        raise PipelineError(Diagnostic(
            where, f"option '{option.name}' of pass '{info.name}' {err}",
            f"write {option.name}=<{option.type_name}>"
            + (f" ({option.help})" if option.help else ""))) from None


class _PipelineParser:
    """A one-pass scanner over the pipeline text; columns are 1-based."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def parse(self) -> list[PipelineStep]:
        steps = []
        self.skip_space()
        if self.at_end():
            return steps
        while True:
            steps.append(self.parse_pass())
            self.skip_space()
            if self.at_end():
                return steps
            if self.peek() != ",":
                raise self.unexpected("',' between passes")
            self.pos += 1
            self.skip_space()
            if self.at_end():
                raise _error("expected a pass name after ','", self.column(),
                             "remove the trailing ','")

    def parse_pass(self) -> PipelineStep:
        column = self.column()
        name = self.match(_NAME)
        if name is None:
            raise self.unexpected("a pass name")
        info = _lookup(name, _at(column))
        options = info.defaults()
        self.skip_space()
        if self.peek() == "{":
            options.update(self.parse_options(info))
        return name, options

    def parse_options(self, info: PassInfo) -> dict[str, Any]:
        open_column = self.column()
        self.pos += 1
        raw: dict[str, tuple[str, int]] = {}
        last_key = None
        while True:
            self.skip_space_and_commas()
            if self.at_end():
                raise _error(f"'{{' opened at column {open_column} is not closed",
                             self.column(), "add '}' after the options")
            if self.peek() == "}":
                self.pos += 1
                break
            column = self.column()
            word = self.match(_NAME)
            # A list item may go on past a name (``blur.k:4``).
            tail = self.match(_BARE_VALUE) if word is not None and self.peek() != "=" else None
            self.skip_space()
            if word is not None and tail is None and self.peek() == "=":
                last_key = self.start_option(info, word, column, raw)
            elif last_key is not None and info.option(last_key).type is list:
                item = word + (tail or "") if word is not None else self.value()
                value, first = raw[last_key]
                raw[last_key] = (f"{value},{item}", first)
            elif word is not None:
                word += tail or ""
                raise _error(f"expected '=' after option '{word}'", self.column(),
                             f"write {word}=<value>")
            else:
                raise self.unexpected("an option name")
        return {key: _convert(info, info.option(key), value, _at(column))
                for key, (value, column) in raw.items()}

    def start_option(self, info, key, column, raw) -> str:
        _option(info, key, _at(column))
        if key in raw:
            raise _error(f"option '{key}' of pass '{info.name}' is given twice",
                         column, "give each option once")
        self.pos += 1
        self.skip_space()
        raw[key] = (self.value(), column)
        return key

    def value(self) -> str:
        quote = self.peek()
        if quote in ("'", '"'):
            end = self.text.find(quote, self.pos + 1)
            if end < 0:
                raise _error(f"string starting at column {self.column()} is not "
                             "closed", self.column(), f"add the closing {quote}")
            text = self.text[self.pos + 1:end]
            self.pos = end + 1
            return text
        text = self.match(_BARE_VALUE)
        if text is None:
            raise self.unexpected("a value")
        return text

    # -- scanning helpers
    def match(self, pattern: re.Pattern) -> str | None:
        found = pattern.match(self.text, self.pos)
        if not found:
            return None
        self.pos = found.end()
        return found.group()

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def column(self) -> int:
        return self.pos + 1

    def skip_space(self) -> None:
        while self.peek().isspace() and self.peek():
            self.pos += 1

    def skip_space_and_commas(self) -> None:
        while self.peek() and (self.peek().isspace() or self.peek() == ","):
            self.pos += 1

    def unexpected(self, expected: str) -> PipelineError:
        found = f"'{self.peek()}'" if not self.at_end() else "the end"
        return _error(f"expected {expected}, found {found}",
                      self.column(), "write passes as name or name{option=value}, "
                      "separated by ','")
