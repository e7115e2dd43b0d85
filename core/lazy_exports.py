"""A package's public names imported on first use (PEP 562), so that
importing one light module of the package (a compile worker's entry
point) does not import all of it.

    from hpvm.lazy_exports import lazy_exports
    __getattr__, __dir__ = lazy_exports(__name__, {"CStyleRenderer": "cstyle"})
"""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, exports: dict[str, str]):
    """(``__getattr__``, ``__dir__``) for ``package``, whose public name
    ``n`` is defined in its module ``exports[n]``, imported when ``n`` is
    first read."""
    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
