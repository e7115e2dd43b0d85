"""Several elementwise ATen ops as one GPU kernel, through TorchInductor.

A chain of elementwise steps run as ATen ops makes one pass over memory
per step; on a GPU those passes, not the arithmetic, are the time.
:func:`fused` compiles a function of tensors into one Triton kernel where
Triton is installed, and leaves it as it is elsewhere (the CPU, where
ATen's ops are what runs, or a GPU without Triton).  Compiling happens on
a node's first launch, outside any CUDA graph capture (the capture's
warm-up run launches it first).
"""
from __future__ import annotations

from typing import Callable

import torch

_FUSED: dict = {}


def fused(function: Callable, dynamic: bool | None = False) -> Callable:
    """``function`` compiled by Inductor where Triton is installed;
    ``function`` itself elsewhere, or once compiling it failed (the eager
    code is the same math).  ``dynamic=False``: each shape gets kernels of
    its own (they run faster); past Dynamo's recompile limit (8 shapes
    per function) Dynamo runs the eager code.  ``dynamic=None``: after a
    second shape, one kernel for every shape."""
    key = (function, dynamic)
    if key not in _FUSED:
        _FUSED[key] = function
        try:
            import triton  # noqa: F401  (Inductor's GPU code generator)
            _FUSED[key] = _falling_back(torch.compile(function, dynamic=dynamic), key)
        except ImportError:
            pass
    return _FUSED[key]


def _falling_back(compiled: Callable, key) -> Callable:
    function = key[0]

    def run(*args):
        if _FUSED.get(key) is function:
            return function(*args)
        try:
            return compiled(*args)
        except Exception:  # Inductor fails in many ways; the eager code is the same math
            _FUSED[key] = function
            return function(*args)
    return run
