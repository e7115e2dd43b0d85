"""``hpvm compile prog.py:fn``: load a Python file by path and build the
Module of one of its programs."""
from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

from ..errors import HpvmError
from ..ir.graph import Module
from .builder import Graph
from .errors import frontend_error
from .program import ProgramDef


def load_python_file(path: str | Path):
    """Import the Python file at ``path`` as a fresh module."""
    path = Path(path)
    if not path.is_file():
        raise frontend_error(f"no such file: {path}", "give the path of a .py file: prog.py:fn")
    name = f"hpvm_user_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # dataclasses and inspect look modules up here
    try:
        spec.loader.exec_module(module)
    except HpvmError:
        del sys.modules[name]
        raise
    except RecursionError:
        del sys.modules[name]
        raise frontend_error(f"{path}: Python cannot compile it: the code nests too deeply",
                             "split deep expressions with intermediate variables") from None
    except (Exception, SystemExit) as error:  # the user's program failed while importing
        del sys.modules[name]
        raise frontend_error(f"{_where_raised(error, path)}: importing the program raised "
                             f"{type(error).__name__}: {error}", "fix the program") from None
    return module


def _where_raised(error: BaseException, path: Path) -> str:
    """``path:line`` of the deepest frame in ``path`` that ``error`` passed."""
    if isinstance(error, SyntaxError) and error.lineno:
        return f"{path}:{error.lineno}"
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
             if Path(frame.filename) == path]
    return f"{path}:{lines[-1]}" if lines else str(path)


def compile_program(spec: str) -> Module:
    """The Module of ``spec`` = ``"path/to/prog.py:name"``, where ``name``
    is an @hpvm.program, a builder Graph, a Module, or a function of no
    arguments returning a Graph or a Module."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise frontend_error(f"'{spec}' does not name a program", "write FILE.py:NAME, e.g. prog.py:matmul")
    module = load_python_file(path)
    if not hasattr(module, name):
        found = [n for n, v in vars(module).items() if isinstance(v, (ProgramDef, Graph, Module))]
        raise frontend_error(f"{path} has no '{name}'",
                             f"programs in that file: {', '.join(found) or 'none'}")
    return as_module(getattr(module, name), spec)


def as_module(value, what: str) -> Module:
    """A Module from a program, graph, module, or a function making one."""
    if isinstance(value, ProgramDef):
        return value.build()
    if isinstance(value, Graph):
        return value.build()
    if isinstance(value, Module):
        return value
    if callable(value):
        return as_module(value(), what) if not isinstance(value, type) else _not_program(what)
    return _not_program(what)


def _not_program(what: str):
    raise frontend_error(f"'{what}' is not an hpvm program",
                         "name an @hpvm.program, a Graph, or a function returning one")
