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
from ..options import OPTION_TYPES, Option  # noqa: F401  (re-exported: passes declare options)

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
