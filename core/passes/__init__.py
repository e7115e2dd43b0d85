"""Passes: named Module -> Module transforms, a registry, pipelines.

    from hpvm.passes import run_pipeline
    module = run_pipeline(module, "inline,const-fold,dce", verify_each=True)

Built-in passes (one per file): dce, const-fold, inline, sequentialize,
legalize-tensor-ops.  Plugins add theirs with ``register_pass``.
"""
from .errors import PassError, PipelineError
from .manager import PassManager, run_pipeline
from .pipeline import format_pipeline, parse_pipeline
from .registry import (
    Option, PassInfo, get_pass, list_passes, register_pass, unregister_pass,
)

__all__ = [
    "Option", "PassError", "PassInfo", "PassManager", "PipelineError",
    "format_pipeline", "get_pass", "list_passes", "parse_pipeline",
    "register_pass", "run_pipeline", "unregister_pass",
]

# The built-in passes register themselves on import.
from . import const_fold, dce, inline, legalize_tensor_ops, sequentialize  # noqa: E402,F401
