"""hpvm: one hierarchical dataflow-graph IR, many targets as plugins."""
from .hookspec import hookimpl
from .ir.graph import FORMAT_VERSION

__version__ = "0.1.0"
__all__ = ["FORMAT_VERSION", "__version__", "hookimpl"]
