"""The Keras 3 front end: Keras models to HPVM Modules through Keras's
PyTorch backend and torch.export (hpvm.frontend.torch).

    import os; os.environ["KERAS_BACKEND"] = "torch"   # before importing keras
    import keras
    from hpvm.frontend.keras import load
    module = load(model, batch_size=8)      # or load("model.keras")
    exe = hpvm.runtime.compile(module, ["cpu"])
    exe(image=batch)                        # inputs named as the model's Inputs

With the torch backend a Keras model is a ``torch.nn.Module``; its layers
run as ATen operators, which the PyTorch front end translates.  Keras's
channels-last layout shows up as transposes around every convolution and
pooling; the fold-transposes pass of the tensor pipeline cancels them (a
Flatten before a Dense layer reorders the weights instead), so a CNN keeps
one, at its input.  Models in another backend's process (TensorFlow, JAX)
cannot switch backend: export them with ``model.export(path,
format="onnx")`` and load the file with hpvm.frontend.onnx.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import HpvmError
from ..ir.graph import Module
from .torch import load as load_torch

MODEL_SUFFIXES = (".keras", ".h5")
"""Files ``load`` reads with keras.saving.load_model."""


def load(model, batch_size: int = 1, example_inputs: tuple | None = None,
         optimize: bool = True) -> Module:
    """The Module of a Keras model (or of a ``.keras`` / ``.h5`` file).

    The graph's inputs are the model's Inputs, by name, with their batch
    dimension ``batch_size`` (sizes Keras leaves open must be fixed:
    give ``example_inputs``, a tuple of arrays, one per input, instead);
    its outputs are ``y`` (``y0``, ``y1``, ... for several)."""
    keras = _keras()
    if isinstance(model, (str, Path)):
        model = _read(keras, Path(model))
    examples = _examples(model, batch_size, example_inputs)
    import torch  # torch (optional, heavy)
    tensors = tuple(torch.from_numpy(np.ascontiguousarray(e)) for e in examples)
    names = tuple(t.name for t in model.inputs) if _has_inputs(model) else None
    return load_torch(_positional(model, len(tensors)), tensors, optimize, input_names=names)


def _keras():
    """keras, imported with the torch backend unless a backend was chosen."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    try:
        import keras  # keras (optional)
    except ImportError:
        raise HpvmError("Keras models need keras 3 and torch (fix: pip install keras torch)") \
            from None
    backend = keras.backend.backend()
    if backend != "torch":
        raise HpvmError(
            f"this process runs Keras with the '{backend}' backend; hpvm reads Keras models "
            "through the torch backend (fix: set KERAS_BACKEND=torch before importing keras, "
            "or export the model with model.export('model.onnx', format='onnx') and load "
            "that file)")
    return keras


def _read(keras, path: Path):
    if path.suffix not in MODEL_SUFFIXES:
        raise HpvmError(f"'{path}' is not a Keras model file (fix: give a "
                        f"{' or '.join(MODEL_SUFFIXES)} file saved with model.save)")
    if not path.is_file():
        raise HpvmError(f"'{path}': no such file")
    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as error:  # Keras's own reason: a damaged or foreign file
        raise HpvmError(f"'{path}' could not be read by Keras: {error}") from None


def _has_inputs(model) -> bool:
    try:
        return bool(model.inputs)
    except (AttributeError, ValueError):  # a subclassed model that was never called
        return False


def _examples(model, batch_size: int, example_inputs) -> tuple:
    if example_inputs is not None:
        examples = example_inputs if isinstance(example_inputs, (tuple, list)) \
            else (example_inputs,)
        return tuple(np.asarray(e) for e in examples)
    if not _has_inputs(model):
        raise HpvmError(f"Keras model '{model.name}' has no known inputs (fix: build it from "
                        "keras.Input, or pass example_inputs=(array, ...))")
    if batch_size < 1:
        raise HpvmError(f"batch_size {batch_size} must be at least 1")
    examples = []
    for tensor in model.inputs:
        shape = list(tensor.shape)
        if shape and shape[0] is None:
            shape[0] = batch_size
        if None in shape:
            raise HpvmError(f"input '{tensor.name}' of Keras model '{model.name}' has open "
                            f"sizes {tuple(tensor.shape)} (fix: give keras.Input a full shape, "
                            "or pass example_inputs=(array, ...))")
        examples.append(np.zeros(shape, dtype=np.dtype(tensor.dtype)))
    return tuple(examples)


def _positional(model, count: int):
    """``model`` as a torch module called with one tensor per input
    (torch.export's form); Keras takes several inputs as one list."""
    import torch  # torch (optional, heavy)

    class Positional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *inputs):
            return self.model(list(inputs) if count > 1 else inputs[0], training=False)

    return Positional()
