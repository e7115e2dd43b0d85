"""The pass registry: passes are named functions ``Module -> Module`` with
declared, typed options.

Register a pass with::

    @register_pass("loop-unroll",
                   options=[Option("factor", int, 4, "unroll factor")])
    def loop_unroll(module, factor):
        ...

The function receives the module and every declared option as a keyword
argument (defaults filled in) and returns a new Module; it must not mutate
its input.  The first line of its docstring is the pass's description
unless ``description=`` is given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..ir.graph import Module

OPTION_TYPES = (int, float, bool, str, list)
"""Types an option may have; ``list`` is a list of strings written
``a,b,c`` and passed to the pass as a tuple."""

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Option:
    """A declared option of a pass: name, type (see OPTION_TYPES), default
    and a one-line help text."""

    name: str
    type: type
    default: Any
    help: str = ""

    def __post_init__(self):
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option '{self.name}': type must be one of "
                             f"{', '.join(t.__name__ for t in OPTION_TYPES)}")

    @property
    def type_name(self) -> str:
        return "list of names" if self.type is list else self.type.__name__

    def convert(self, value: Any) -> Any:
        """``value`` (text from a pipeline, or a Python value) as this
        option's type; ValueError saying what was expected otherwise."""
        if isinstance(value, str):
            return self._from_text(value)
        if self.type is list and isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, self.type) and not (self.type is int and isinstance(value, bool)):
            return value
        raise ValueError(f"expects {self._expected()}, got {value!r}")

    def _from_text(self, text: str) -> Any:
        if self.type is str:
            return text
        if self.type is list:
            return tuple(part.strip() for part in text.split(",") if part.strip())
        if self.type is bool:
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
        else:
            try:
                return self.type(text)
            except ValueError:
                pass
        raise ValueError(f"expects {self._expected()}, got '{text}'")

    def _expected(self) -> str:
        if self.type is bool:
            return "a bool (true or false)"
        if self.type is list:
            return "a comma-separated list of names"
        return f"an {self.type_name}" if self.type is int else f"a {self.type_name}"


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: its name, description, options and function."""

    name: str
    description: str
    options: tuple[Option, ...]
    function: Callable[..., Module]

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {option.name: option.default for option in self.options}

    def run(self, module: Module, options: dict[str, Any]) -> Module:
        """Run the pass with ``options`` (missing ones take defaults)."""
        return self.function(module, **{**self.defaults(), **options})


_PASSES: dict[str, PassInfo] = {}


def register_pass(name: str, options=(), description: str | None = None,
                  replace: bool = False):
    """Decorator registering ``fn(module, **options) -> Module`` as pass
    ``name``.  Registering a taken name is an error unless ``replace``."""
    def decorate(fn):
        if name in _PASSES and not replace:
            raise ValueError(f"a pass named '{name}' is already registered "
                             f"(by {_PASSES[name].function.__module__})")
        text = description if description is not None else _first_line(fn.__doc__)
        _PASSES[name] = PassInfo(name, text, tuple(options), fn)
        return fn
    return decorate


def unregister_pass(name: str) -> None:
    """Remove pass ``name`` (plugins unloading, tests)."""
    _PASSES.pop(name, None)


def get_pass(name: str) -> PassInfo:
    """The registered pass ``name``; KeyError if there is none (use
    parse_pipeline for a user-facing error)."""
    return _PASSES[name]


def pass_names() -> list[str]:
    return sorted(_PASSES)


def list_passes() -> list[PassInfo]:
    """Every registered pass, sorted by name (what ``hpvm passes`` shows)."""
    return [_PASSES[name] for name in sorted(_PASSES)]


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
