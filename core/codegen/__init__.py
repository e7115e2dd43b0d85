"""Code generation shared by back ends that know no device: the C-style
kernel renderer (hpvm.codegen.cstyle) that OpenCL, FPGA OpenCL and C back
ends subclass with small overrides."""
from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .cstyle import CStyleRenderer, RenderedSource
    from .cstyle_expressions import BufferBinding, ScalarBinding
    from .source import Identifiers, Origin, SourceWriter

EXPORTS = {"CStyleRenderer": "cstyle", "RenderedSource": "cstyle",
           "BufferBinding": "cstyle_expressions", "ScalarBinding": "cstyle_expressions",
           "Identifiers": "source", "Origin": "source", "SourceWriter": "source"}
"""Imported on first use: the compile worker (worker.py) needs none of them."""
__getattr__, __dir__ = lazy_exports(__name__, EXPORTS)
__all__ = ["BufferBinding", "CStyleRenderer", "Identifiers", "Origin", "RenderedSource",
           "ScalarBinding", "SourceWriter"]
