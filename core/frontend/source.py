"""The Python source of a decorated function: its AST, where each AST node
is in the file (for error messages), and the values of the names it uses
from the enclosing Python scope (closure variables, globals, builtins)."""
from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import dataclass, field

from ..errors import Location
from .errors import FrontendError, frontend_error

_MISSING = object()


@dataclass
class FunctionSource:
    """A parsed Python function.  Call :meth:`of` to build one."""

    function: object
    tree: ast.FunctionDef
    file: str
    first_line: int          # file line of the source's first line
    indent: int              # columns removed by dedent
    namespace: dict = field(default_factory=dict)

    @classmethod
    def of(cls, function) -> "FunctionSource":
        """Parse ``function`` (a plain Python function defined in a file)."""
        name = getattr(function, "__name__", repr(function))
        try:
            lines, first_line = inspect.getsourcelines(function)
            file = inspect.getsourcefile(function) or "<unknown>"
        except (OSError, TypeError):
            raise frontend_error(
                f"cannot read the source of '{name}'",
                "define hpvm programs and kernels in a .py file, not at an "
                "interactive prompt or with exec()") from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip())
        try:
            module = ast.parse(dedented)
        except (RecursionError, MemoryError):
            raise frontend_error(f"'{name}' nests too deeply for Python's parser",
                                 "split deep expressions with intermediate variables") from None
        tree = module.body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise frontend_error(f"'{name}' is not a plain function",
                                 "decorate a 'def' function")
        source = cls(function, tree, file, first_line, indent, _namespace_of(function))
        too_deep = _deepest_beyond(tree, MAX_NESTING)
        if too_deep is not None:
            raise source.error(too_deep, f"code nested more than {MAX_NESTING} levels deep",
                               "split deep expressions with intermediate variables, and deep "
                               "loop nests with helper functions")
        return source

    @property
    def name(self) -> str:
        return self.tree.name

    def location(self, node: ast.AST | None) -> Location:
        """The file position of ``node`` (1-based line and column)."""
        if node is None or not hasattr(node, "lineno"):
            return Location(file=self.file, line=self.first_line, function=self.name)
        return Location(file=self.file, line=self.first_line + node.lineno - 1,
                        column=node.col_offset + self.indent + 1, function=self.name)

    def error(self, node: ast.AST | None, message: str, fix: str = "") -> FrontendError:
        """A FrontendError located at ``node``."""
        return frontend_error(message, fix, self.location(node))

    def lookup(self, name: str):
        """The value ``name`` has in the function's Python scope, or
        MISSING."""
        value = self.namespace.get(name, _MISSING)
        if value is _MISSING:
            value = getattr(builtins, name, _MISSING)
        return value

    def line_of(self, node: ast.AST) -> int:
        return self.first_line + node.lineno - 1


MISSING = _MISSING


def _namespace_of(function) -> dict:
    """Globals overlaid with closure variables (closures win, as in Python)."""
    namespace = dict(getattr(function, "__globals__", {}))
    code = getattr(function, "__code__", None)
    closure = getattr(function, "__closure__", None) or ()
    if code is not None:
        for var, cell in zip(code.co_freevars, closure):
            try:
                namespace[var] = cell.cell_contents
            except ValueError:  # cell not yet filled (defined later)
                pass
    return namespace


MAX_NESTING = 100
"""Deepest nesting of expressions and statements in a kernel, as the text
form allows (hpvm.ir.text.kernel_parser.MAX_EXPRESSION_DEPTH): the
translation and every pass after it recurse over the tree."""


def _deepest_beyond(tree: ast.AST, limit: int) -> ast.AST | None:
    """A node with a position, nested more than ``limit`` levels below
    ``tree`` (counted without recursion), or None."""
    pending = [(tree, 0, tree)]
    while pending:
        node, depth, located = pending.pop()
        located = node if hasattr(node, "lineno") else located
        if depth > limit:
            return located
        pending.extend((child, depth + 1, located) for child in ast.iter_child_nodes(node))
    return None


def source_of(function) -> FunctionSource:
    """Parse ``function``; errors become FrontendError."""
    try:
        return FunctionSource.of(function)
    except FrontendError:
        raise
    except SyntaxError as exc:
        raise frontend_error(f"cannot parse '{function}': {exc}") from None
