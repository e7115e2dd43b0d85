"""The aten runtime shim: buffers and launches on one torch device.

On the CPU, handles are numpy arrays (``host_memory``) viewed as torch
tensors without copying; on CUDA they are torch tensors in device memory,
and the memory tracker copies through ``copy_in`` / ``copy_out``.  With
``dtype=float16`` float ops compute in half precision: inputs are cast
down, results cast back to the buffer's type.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.graph import ConstantBody, Module, TensorBody
from hpvm.target import Device, NodeRef

from .ops import OPS


class AtenDevice(Device):
    """Runs the tensor-op and constant nodes of ``module`` placed on aten."""

    def __init__(self, module: Module, device: str, compute_dtype: torch.dtype | None):
        self.module = module
        self.device = torch.device(device)
        self.compute_dtype = compute_dtype
        self.host_memory = self.device.type == "cpu"
        self.name = f"aten:{self.device}"
        self._constants: dict[str, torch.Tensor] = {}

    # memory ----------------------------------------------------------------
    def allocate(self, shape, dtype):
        if self.host_memory:
            return np.zeros(tuple(shape), dtype)
        return torch.zeros(tuple(shape), dtype=_torch_dtype(dtype), device=self.device)

    def copy_in(self, handle, array) -> None:
        if self.host_memory:
            handle[...] = array
        else:
            handle.copy_(torch.from_numpy(np.array(array, order="C")))

    def copy_out(self, handle):
        return handle.copy() if self.host_memory else handle.cpu().numpy()

    def duplicate(self, handle, shape, dtype):
        return handle.copy() if self.host_memory else handle.clone()

    # running -----------------------------------------------------------------
    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        graph_node = self.module.graph(node.graph).node(node.node)
        body = graph_node.body
        if isinstance(body, ConstantBody):
            self._tensor(args["value"]).copy_(self._constant(str(node), body.data))
            return None
        assert isinstance(body, TensorBody)
        from hpvm.ir.tensor_ops import get_op
        spec = get_op(body.op, node.node)
        attrs = spec.resolve_attrs(body.attrs)
        inputs = {p.name: self._compute(self._tensor(args[p.name]))
                  for p in body.params if p.direction == "in"}
        output = next(p.name for p in body.params if p.direction == "out")
        target = self._tensor(args[output])
        try:
            with torch.no_grad():
                result = OPS[body.op](inputs, attrs, tuple(target.shape))
        except RuntimeError as error:
            raise ExecutionError(Diagnostic(
                Location(graph=node.graph, node=node.node),
                f"aten: {body.op} failed: {str(error).splitlines()[0]}",
                "run this node on another target (cpu), or without dtype=float16")) from None
        target.copy_(result.reshape(target.shape))
        return None

    # wait(): the default.  Launches queue on the device's stream in the
    # order the scheduler issues them (producers first), and copy_out
    # synchronises, so no launch needs waiting for on the host.

    # helpers -----------------------------------------------------------------
    def _tensor(self, handle) -> torch.Tensor:
        return torch.from_numpy(handle) if isinstance(handle, np.ndarray) else handle

    def _compute(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.compute_dtype is not None and tensor.is_floating_point():
            return tensor.to(self.compute_dtype)
        return tensor

    def _constant(self, key: str, data: np.ndarray) -> torch.Tensor:
        """The constant's data on this device, copied there once."""
        if key not in self._constants:
            self._constants[key] = torch.from_numpy(np.array(data, order="C")).to(self.device)
        return self._constants[key]


def _torch_dtype(dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype
