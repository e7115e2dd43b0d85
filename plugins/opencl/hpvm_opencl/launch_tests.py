"""Branches on a launch's size, decided when the program is built.

A kernel may branch on a condition of its instance counts and constants
alone: latency-unroll's ``if n * 32 <= in_flight { unrolled } else
{ loop }``.  Every work item of a launch takes the same branch, but a GPU
compiler allocates registers for the whole kernel: the unrolled copy that
a large launch never runs still sets how many registers each of its work
items holds, and so how few of them a compute unit keeps in flight.

So each such condition is rendered as a macro, ``HPVM_LAUNCH_<function>_<i>``,
defined in the source as the condition itself unless the build defines
it (so the source alone is right for every launch).  The program built at
compile time defines every test as 0: large launches run it.  A launch
whose tests hold runs a program built with those defined as 1, whose
compiler drops the branches not taken before it allocates registers.
That program is built when such a launch first comes (device.py): one
more build for each kernel that small launches run.
"""
from __future__ import annotations

import re

from hpvm.ir.graph import Module
from hpvm.ir.kernel import (
    Binary, Compare, Const, Expr, If, InstanceCount, KernelFunction, Select, Unary,
)
from hpvm.ir.visit import rewrite, walk
from hpvm.passes.const_fold import fold_expression

_PURE = (Binary, Compare, Const, InstanceCount, Select, Unary)


def is_launch_test(cond: Expr) -> bool:
    """Whether ``cond`` reads instance counts and constants only, and at
    least one count."""
    nodes = list(walk(cond))
    return all(isinstance(n, _PURE) for n in nodes) and \
        any(isinstance(n, InstanceCount) for n in nodes)


def launch_tests(function: KernelFunction) -> tuple[Expr, ...]:
    """The distinct launch tests of ``function``'s branches, in source order."""
    found: list[Expr] = []
    for node in walk(function.body):
        if isinstance(node, If) and is_launch_test(node.cond) and node.cond not in found:
            found.append(node.cond)
    return tuple(found)


def launch_macro(function: str, index: int) -> str:
    """The macro of ``function``'s launch test ``index``."""
    return f"HPVM_LAUNCH_{re.sub(r'[^0-9A-Za-z_]', '_', function)}_{index}"


def true_tests(function: str, tests: tuple[Expr, ...], sizes: tuple[int, ...]
               ) -> tuple[str, ...]:
    """The macros of ``function``'s launch ``tests`` (``launch_tests``)
    that hold for a launch over replication ``sizes``."""
    return tuple(launch_macro(function, i) for i, test in enumerate(tests)
                 if _holds(test, sizes))


def launch_flags(module: Module, true_macros: tuple[str, ...]) -> list[str]:
    """Build flags defining every launch test of ``module``: 1 for
    ``true_macros``, 0 for the others (the program of large launches)."""
    return [f"-D{macro}={int(macro in true_macros)}"
            for function in module.functions.values()
            for macro in (launch_macro(function.name, i)
                          for i in range(len(launch_tests(function))))]


def _holds(test: Expr, sizes: tuple[int, ...]) -> bool:
    """``test``'s value over ``sizes``; false where it is undefined (a
    division by zero, which OpenCL C leaves undefined too)."""
    def count(node):
        return Const(sizes[node.dim] if node.dim < len(sizes) else 1, node.type) \
            if isinstance(node, InstanceCount) else None
    value = fold_expression(rewrite(test, count))
    return isinstance(value, Const) and bool(value.value)


class LaunchTests:
    """Renderer mixin: a branch on a launch test reads its macro."""

    def branch_condition(self, cond: Expr) -> str:
        if not is_launch_test(cond):
            return super().branch_condition(cond)
        macro = launch_macro(self.function.name, launch_tests(self.function).index(cond))
        self.writer.line(f"#ifndef {macro}")
        self.writer.line(f"#define {macro} {self.condition(cond)}")
        self.writer.line("#endif")
        return f"({macro})"
