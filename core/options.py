"""Declared options: a name, a type, a default, the allowed values and one
line of help.  Passes declare theirs (passes/registry.py); each target
declares its compile options (``Target.options()``), and
``resolve_compile_options`` checks what a user passes to ``hpvm.compile``
against them, so a typo is an error that lists the valid choices instead
of silently changing nothing.

    Option("threads", int, None, "threads per node; None: one per core", minimum=1)
    Option("precision", str, "fp32", "float precision", choices=("fp32", "fp16"))

A default of None means "not set: the target decides"; None is then always
accepted.  Type ``object`` takes any value the target checks itself (a
work-group size per node ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import HpvmError

OPTION_TYPES = (int, float, bool, str, list, object)
"""Types an option may have; ``list`` is a list of strings written
``a,b,c`` (passed on as a tuple); ``object`` is any value."""

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class OptionError(HpvmError):
    """An option that nothing declares, or a value its declaration refuses."""


@dataclass(frozen=True)
class Option:
    """A declared option: name, type (see OPTION_TYPES), default, one line
    of help, and optionally the allowed ``choices`` or a ``minimum`` and
    ``maximum`` for numbers."""

    name: str
    type: type
    default: Any
    help: str = ""
    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None

    def __post_init__(self):
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option '{self.name}': type must be one of "
                             f"{', '.join(t.__name__ for t in OPTION_TYPES)}")

    @property
    def type_name(self) -> str:
        return {list: "list of names", object: "any"}.get(self.type, self.type.__name__)

    def describe(self) -> str:
        """``type, allowed values, default``, as ``hpvm targets --options`` shows it."""
        allowed = ""
        if self.choices:
            allowed = f" in {{{', '.join(map(str, self.choices))}}}"
        elif self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else f"{self.minimum:g} <= "
            high = "" if self.maximum is None else f" <= {self.maximum:g}"
            allowed = f" ({low}value{high})"
        return f"{self.type_name}{allowed}, default {self.default!r}"

    def convert(self, value: Any) -> Any:
        """``value`` (text from a pipeline or command line, or a Python
        value) as this option's type, checked against the allowed values;
        ValueError saying what was expected otherwise."""
        if value is None and self.default is None:
            return None
        converted = self._from_text(value) if isinstance(value, str) else self._typed(value)
        if self.choices and converted not in self.choices:
            raise ValueError(f"expects one of {', '.join(map(repr, self.choices))}, got {value!r}")
        if self.minimum is not None and converted < self.minimum:
            raise ValueError(f"expects {self._expected()} of at least {self.minimum:g}, got {value!r}")
        if self.maximum is not None and converted > self.maximum:
            raise ValueError(f"expects {self._expected()} of at most {self.maximum:g}, got {value!r}")
        return converted

    def _typed(self, value: Any) -> Any:
        if self.type is object:
            return value
        if self.type is list and isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, self.type) and not (self.type is int and isinstance(value, bool)):
            return value
        raise ValueError(f"expects {self._expected()}, got {value!r}")

    def _from_text(self, text: str) -> Any:
        if self.type in (str, object):
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


CORE_OPTIONS = (
    Option("pipeline", str, "", "passes run on the whole program before placement "
           "(\"node-fusion,dce\" ...); \"default\": the first listed target's default pipeline"),
    Option("task_parallelism", bool, True, "run nodes with no path between them at the same "
           "time; off: one node at a time, in the thread that starts the run"),
)
"""Compile options of the core itself, read by ``hpvm.compile``; targets
never receive them."""


def resolve_compile_options(options: dict | None, target_names, registry,
                            strict: bool = True) -> dict[str, dict]:
    """The options each of ``target_names`` receives, checked: a plain key
    goes to every listed target that declares it, a key named after a
    target (``{"cpu": {"threads": 4}}``) holds options for that target
    alone.  OptionError for a key no listed target declares, a section for
    no installed target, or a value a declaration refuses (naming the
    target that declares it and the valid choices).  Not ``strict``: keys
    for targets other than ``target_names`` are passed over (loading an
    executable that uses only some of the targets it was compiled for)."""
    options = dict(options or {})
    declared = {name: {o.name: o for o in _declared_options(registry, name)} for name in target_names}
    installed = {info.name for info in registry.targets()}
    resolved: dict[str, dict] = {name: {} for name in target_names}
    sections = {key: value for key, value in options.items() if key in installed}
    core = {option.name: option for option in CORE_OPTIONS}
    for key, value in options.items():
        if key in sections:
            continue
        if key in core:  # hpvm's own, and a target declaring it gets it too
            _checked(core[key], "hpvm", value)
        owners = [name for name in target_names if key in declared[name]]
        if not owners and strict and key not in core:
            raise OptionError(f"unknown compile option '{key}' (fix: use one of the options "
                              f"the targets declare: {_listing(declared)}; or of hpvm itself: "
                              f"{', '.join(core)})")
        for name in owners:
            resolved[name][key] = _checked(declared[name][key], name, value)
    for name, section in sections.items():
        if not isinstance(section, dict):
            raise OptionError(f"compile option '{name}' names a target, so it takes a dict of "
                              f"that target's options, not {section!r}")
        if name not in resolved:  # a target that is installed but not listed
            continue
        for key, value in section.items():
            if key not in declared[name] and strict:
                raise OptionError(f"target '{name}' has no option '{key}' (fix: use one of "
                                  f"{_listing({name: declared[name]})})")
            if key in declared[name]:
                resolved[name][key] = _checked(declared[name][key], name, value)
    return resolved


def _declared_options(registry, name: str) -> tuple[Option, ...]:
    try:
        return tuple(registry.target(name).target.options())
    except HpvmError:  # not installed: placement reports it
        return ()


def _checked(option: Option, target: str, value: Any) -> Any:
    try:
        return option.convert(value)
    except ValueError as error:
        about = f"{option.help}; " if option.help else ""
        owner = "hpvm" if target == "hpvm" else f"target '{target}'"
        raise OptionError(f"option '{option.name}' of {owner} {error} "
                          f"(fix: '{option.name}' is the {about}it takes {option.describe()})") from None


def _listing(declared: dict[str, dict[str, Option]]) -> str:
    parts = [f"{', '.join(sorted(options))} ({name})" for name, options in declared.items() if options]
    return "; ".join(parts) or "none"
