"""Code generation shared by back ends that know no device: the C-style
kernel renderer (hpvm.codegen.cstyle) that OpenCL, FPGA OpenCL and C back
ends subclass with small overrides."""
from .cstyle import CStyleRenderer, RenderedSource
from .cstyle_expressions import BufferBinding, ScalarBinding
from .source import Identifiers, Origin, SourceWriter

__all__ = ["BufferBinding", "CStyleRenderer", "Identifiers", "Origin", "RenderedSource",
           "ScalarBinding", "SourceWriter"]
