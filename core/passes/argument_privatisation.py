"""``argument-privatisation`` (HPVM2FPGA's AP): a ``private`` buffer
parameter of fixed size gets a private array, filled from the argument
when the instance starts; every read and write of the instance goes to
that array, never to global memory, and the port becomes a plain ``in``.

This is what ``private`` means (each instance starts from the incoming
value and its writes are its own), made explicit, so that a target keeps
the copy in registers or on-chip memory instead of one global scratch copy
per instance.  sequentialize uses the same rewrite for written private
buffers once instances run one after another.

Options: ``params``, ``FUNCTION.PARAM`` names to privatise (the DSE's
knobs, one per eligible parameter; ``eligible_params`` lists them);
default: every eligible one.  Eligible: a ``private`` buffer with a
constant shape of at most ``max_elements`` elements.  A named parameter
that is not eligible is refused with the reason.
"""
from __future__ import annotations

import dataclasses
import math

from ..errors import Diagnostic, Location
from ..ir.graph import Module
from ..ir.kernel import ArrayDecl, Const, For, KernelFunction, Load, Stmt, Store, Var
from ..ir.parameter import Parameter
from ..ir.types import I64
from .errors import PassError
from .names import NameGenerator, function_names, substitute
from .registry import Option, register_pass


@register_pass("argument-privatisation", options=[
    Option("params", list, (), "FUNCTION.PARAM private buffers to privatise (default: all eligible)"),
    Option("max_elements", int, 4096, "largest buffer given a private array, in elements")])
def argument_privatisation(module: Module, params: tuple[str, ...], max_elements: int) -> Module:
    """Give fixed-size private buffer parameters a private array per instance."""
    chosen = set(params) if params else set(eligible_params(module, max_elements))
    check_named_params("argument-privatisation", params,
                       lambda name: _problem(module, name, max_elements),
                       lambda: eligible_params(module, max_elements))
    functions = {}
    for name, function in module.functions.items():
        wanted = {p.name for p in function.params if f"{name}.{p.name}" in chosen}
        functions[name] = privatise(function, wanted) if wanted else function
    return dataclasses.replace(module, functions=functions)


def eligible_params(module: Module, max_elements: int = 4096) -> list[str]:
    """``FUNCTION.PARAM`` of every parameter this pass can privatise."""
    return [f"{name}.{p.name}" for name, function in module.functions.items()
            for p in function.params if _param_problem(p, max_elements) is None]


def _problem(module: Module, name: str, max_elements: int) -> str | None:
    param = named_param(module, name)
    if param is None:
        return "names no parameter (write FUNCTION.PARAM)"
    return _param_problem(param, max_elements)


def _param_problem(param: Parameter, max_elements: int) -> str | None:
    if param.direction != "private" or not param.is_buffer:
        return "is not a private buffer"
    return fixed_size_problem(param, max_elements)


def named_param(module: Module, name: str) -> Parameter | None:
    """The parameter ``FUNCTION.PARAM`` names, or None."""
    function_name, _, param_name = name.partition(".")
    function = module.functions.get(function_name)
    return next((p for p in function.params if p.name == param_name), None) if function else None


def fixed_size_problem(param: Parameter, max_elements: int) -> str | None:
    """Why buffer ``param`` cannot be copied into an array of at most
    ``max_elements`` elements, or None."""
    shape = param.type.shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return "has a size that is not fixed"
    if math.prod(shape) > max_elements:
        return f"has {math.prod(shape)} elements, more than max_elements={max_elements}"
    return None


def check_named_params(pass_name: str, names, problem_of, eligible) -> None:
    """PassError naming the first of ``names`` (``FUNCTION.PARAM``) that
    ``problem_of`` refuses, with the reason and the ``eligible()`` ones."""
    for name in names:
        problem = problem_of(name)
        if problem is not None:
            function, _, param = name.partition(".")
            raise PassError(Diagnostic(Location(function=function or None, port=param or None),
                                       f"{pass_name}: '{name}' {problem}",
                                       f"the eligible parameters are: "
                                       f"{', '.join(eligible()) or 'none'}"))


def privatise(function: KernelFunction, names: set[str]) -> KernelFunction:
    """``function`` with each of the private buffer parameters ``names``
    (fixed shapes) copied into a private array at the start, used instead
    of it, and turned into an ``in`` port."""
    body, params = private_copies(function, names)
    return dataclasses.replace(function, body=body, params=params)


def private_copies(function: KernelFunction, names: set[str]) -> tuple[tuple[Stmt, ...], tuple]:
    """(new body, new params) of the rewrite ``privatise`` describes."""
    params = tuple(dataclasses.replace(p, direction="in") if p.name in names else p
                   for p in function.params)
    return copied_into_arrays(function, names, "private"), params


def copied_into_arrays(function: KernelFunction, names: set[str], suffix: str,
                       space: str = "private") -> tuple[Stmt, ...]:
    """``function``'s body, each fixed-shape buffer parameter in ``names``
    first copied into an array of ``space`` (``<param>_<suffix>``) that
    the rest of the body uses instead."""
    generator = NameGenerator(function_names(function))
    copies: tuple[Stmt, ...] = ()
    renames: dict[str, str] = {}
    for param in function.params:
        if param.name not in names:
            continue
        copy, index = generator.fresh(f"{param.name}_{suffix}"), generator.fresh("copy_index")
        at = (Var(index, I64),)
        copies += (ArrayDecl(copy, param.type.element, param.type.shape, space),
                   For(index, Const(0, I64), Const(math.prod(param.type.shape), I64), 1,
                       (Store(copy, at, Load(param.name, at, param.type.element)),)))
        renames[param.name] = copy
    return copies + substitute(function.body, renames)

