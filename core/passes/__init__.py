"""Passes: named Module -> Module transforms, a registry, pipelines.

    from hpvm.passes import run_pipeline
    module = run_pipeline(module, "inline,const-fold,dce", verify_each=True)

Built-in passes (one per file): dce, dead-inputs, const-fold, inline, sequentialize,
loop-unroll, latency-unroll, loop-fusion, loop-interchange, loop-tile, node-fusion,
argument-privatisation, input-buffering, parallel-reduce, infer-reductions,
tile, stencil-fusion, register-tile, legalize-tensor-ops, and on tensor-op
graphs fold-tensor-constants, expand-powers, fold-transposes,
fuse-ops, fuse-elementwise and fuse-rows (TENSOR_PIPELINE runs them, as the ONNX
front end does by default).  Plugins add theirs with ``register_pass``.
"""
from .errors import PassError, PipelineError
from .manager import PassManager, run_pipeline
from .pipeline import format_pipeline, parse_pipeline
from .registry import (
    Option, PassInfo, get_pass, list_passes, register_pass, unregister_pass,
)

TENSOR_PIPELINE = ("fold-tensor-constants,expand-powers,fold-transposes,fuse-ops,"
                   "fuse-elementwise,fuse-rows")
"""The optimisations of tensor-op graphs, in order: constants folded first
(so that fusion sees constant weights), squares and cubes by a constant
exponent written as products (so that they fuse), layout changes moved past
elementwise ops and cancelled (channels-last models), then conv/gemm with
bias, batchnorm and activation, then the remaining elementwise chains, then
reductions along rows with the elementwise ops around them (layer norms,
hand-written softmaxes)."""

__all__ = [
    "TENSOR_PIPELINE", "Option", "PassError", "PassInfo", "PassManager", "PipelineError",
    "format_pipeline", "get_pass", "list_passes", "parse_pipeline",
    "register_pass", "run_pipeline", "unregister_pass",
]

# The built-in passes register themselves on import.
from . import (  # noqa: E402,F401
    approximate, argument_privatisation, calibrate, const_fold, copy_propagation, dce,
    expand_powers,
    fold_tensor_constants, fold_transposes, fuse_attention, fuse_elementwise,
    fuse_ops, fuse_rows, infer_reductions, inline,
    input_buffering, latency_unroll, legalize_tensor_ops, loop_fusion, loop_instances,
    loop_interchange, loop_jam,
    loop_tile, loop_unroll, node_fusion, out_of_place, parallel_reduce,
    register_tile, scratch_expansion, sequentialize, stencil_fusion, task_split, tile,
)
