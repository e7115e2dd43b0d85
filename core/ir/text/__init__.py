"""The canonical, versioned text form of the HPVM IR (``.hpvm`` files).

``print_module(module)`` writes a module; ``parse_module(text)`` and
``load_module(path)`` read one back: ``parse_module(print_module(m)) == m``
and printing is a fixed point.  ``print_expr`` / ``print_stmts`` print
kernel IR pieces for messages.  Grammar: docs/text-format.md.
"""
from .parser import load_module, parse_module
from .printer import print_expr, print_module, print_stmts

__all__ = ["print_module", "parse_module", "load_module", "print_expr", "print_stmts"]
