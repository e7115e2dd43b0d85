"""The ONNX front end: ONNX models (from PyTorch's or Keras's exporters, or
written by hand) to HPVM Modules of tensor-op nodes.

    from hpvm.frontend.onnx import load
    module = load("lenet.onnx")          # or load(model_proto)
    exe = hpvm.runtime.compile(module, ["cpu"])
    exe(input=batch)

Weights become ConstantBody nodes; a dynamic batch (``dim_param``) becomes
a shape symbol.  Unsupported operators are reported together, each with
the node that uses it, in one ParseError.

By default the imported graph is optimised with hpvm.passes.TENSOR_PIPELINE
(tensor constants folded; conv/gemm fused with bias, batchnorm and
activation; elementwise chains fused).  ``load(model, optimize=False)``
gives the graph node for node as the model has it.
"""
from __future__ import annotations

from pathlib import Path

from ...errors import Diagnostic, Location, ParseError
from ...ir.graph import Module
from ...ir.verify import verify
from ...passes import TENSOR_PIPELINE, run_pipeline
from .importer import import_model


def load(path_or_model, optimize: bool = True) -> Module:
    """The Module of an ONNX model given as a path or a ModelProto;
    ``optimize``: run hpvm.passes.TENSOR_PIPELINE on it."""
    module = _import(path_or_model)
    if not optimize:
        return module
    return run_pipeline(module, TENSOR_PIPELINE)


def _import(path_or_model) -> Module:
    try:
        import onnx  # onnx (heavy)
    except ImportError:  # onnx is a dependency of hpvm; this is a broken install
        raise ParseError(Diagnostic(Location(), "the onnx package is not installed",
                                    "pip install onnx")) from None
    if isinstance(path_or_model, (str, Path)):
        path = str(path_or_model)
        try:
            model = onnx.load(path)
        except (OSError, Exception) as error:
            raise ParseError(Diagnostic(Location(file=path), f"cannot read ONNX model: {error}",
                                        "pass the path of a .onnx file")) from None
        return import_model(model, source=path)
    if isinstance(path_or_model, onnx.ModelProto):
        return import_model(path_or_model)
    raise ParseError(Diagnostic(Location(), f"cannot load {type(path_or_model).__name__} as "
                                "an ONNX model", "pass a path or an onnx.ModelProto"))


def compile_onnx(path, optimize: bool = True) -> Module:
    """``hpvm compile model.onnx``: the verified (by default optimised)
    Module of the model."""
    module = load(path, optimize)
    verify(module)
    return module


__all__ = ["compile_onnx", "load"]
