"""The aten runtime shim: buffers and launches on one torch device.

On the CPU, handles are numpy arrays (``host_memory``) viewed as torch
tensors without copying; on CUDA they are :class:`Slot` s whose tensor in
device memory is made when the buffer is first written: a launch's result
becomes the output buffer itself (no zero fill, no copy into a buffer
made beforehand), and the memory tracker copies through ``copy_in`` /
``copy_out``.  Nothing placed on aten updates a buffer in place, so a
result may share memory with an input (a reshape's does).  With
``precision=fp16`` float ops compute in half precision: inputs are cast
down, results cast back to the buffer's type.  A node with the INT8 knob
quantises its operands (int8.py); exact nodes compute in IEEE f32 and
TF32 ones on tensor cores (tf32.py).
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.ir.graph import ConstantBody, Module, TensorBody
from hpvm.ir.tensor_ops import get_op
from hpvm.ir.tensor_ops.precision import PRODUCT_OPS, operands
from hpvm.target import ArrayRefused, Device, NodeRef

from . import int8, tf32
from .ops import OPS

_CAPTURE_LOCK = threading.Lock()
"""Held while a schedule's launches are captured (:meth:`AtenDevice.capture`)."""

_STORAGE_USERS = getattr(torch._C, "_storage_Use_Count", None)
"""Tensors and views using a storage (torch's CUDA graph trees ask it too)."""


def _users(tensor: torch.Tensor) -> int:
    """Tensors and views using the memory under ``tensor``."""
    return _STORAGE_USERS(tensor.untyped_storage()._cdata)


def _memory(tensor: torch.Tensor) -> int:
    """Where the memory under ``tensor`` (and every view of it) starts."""
    return tensor.untyped_storage().data_ptr()


class Slot:
    """A buffer on a CUDA device: its shape, dtype and tensor (None until
    written).  A half-precision result is kept as it is and widened when
    read as the buffer's type, so an FP16 consumer of an FP16 producer
    reads it without two conversions (the values are the same: a half
    value is exact in f32)."""

    __slots__ = ("shape", "dtype", "tensor", "users")

    def __init__(self, shape, dtype: torch.dtype, tensor: torch.Tensor | None = None):
        self.shape, self.dtype, self.tensor = tuple(shape), dtype, tensor
        self.users = 0
        """Users of the tensor's memory when it was last lent (AtenDevice.lend)."""

    def fill(self, value: torch.Tensor) -> None:
        narrow = value.dtype == torch.float16 and self.dtype.is_floating_point
        self.tensor = value.reshape(self.shape).to(value.dtype if narrow else self.dtype)

    def read(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The tensor as ``dtype`` (default: the buffer's type)."""
        wanted = dtype or self.dtype
        return self.tensor if self.tensor.dtype == wanted else self.tensor.to(wanted)


class AtenDevice(Device):
    """Runs the tensor-op and constant nodes of ``module`` placed on aten."""

    def __init__(self, module: Module, device: str, compute_dtype: torch.dtype | None,
                 cuda_graphs: bool = True, all_tf32: bool = False):
        self.module = module
        self.device = torch.device(device)
        self.compute_dtype = compute_dtype
        self.all_tf32 = all_tf32
        """Target option precision=tf32: every product node in TF32."""
        self.host_memory = self.device.type == "cpu"
        self.async_launch = self.device.type == "cuda"  # launches queue on the stream
        self.multicore_launch = self.host_memory  # ATen's CPU kernels use every core
        self.graph_capture = cuda_graphs and self.device.type == "cuda"
        """Every launch replaces its output's tensor whole (Slot.fill)."""
        self.capture_failure: str | None = None
        """Why the last capture fell back to plain launches, if it did."""
        self.name = f"aten:{self.device}"
        self._index = (self.device.index if self.device.index is not None
                       else torch.cuda.current_device()) if self.device.type == "cuda" else None
        self._constants: dict = {}
        self._constant_count, self._constant_starts = 0, set()
        self._plans: dict[NodeRef, _Plan] = {}

    # memory ----------------------------------------------------------------
    def allocate(self, shape, dtype):
        if self.host_memory:
            return np.zeros(tuple(shape), dtype)
        return Slot(shape, _torch_dtype(dtype))

    def copy_in(self, handle, array) -> None:
        if self.host_memory:
            handle[...] = array
            return
        dense = array.flags.c_contiguous and array.flags.writeable
        source = torch.from_numpy(array if dense else np.array(array, order="C"))
        kept = handle.tensor
        if kept is not None and kept.shape == source.shape and kept.dtype == handle.dtype:
            kept.copy_(source)  # into the tensor's own memory, where a captured graph reads
        else:
            handle.fill(source.to(self.device))

    def capture(self, run):
        """``run``'s launches recorded in a CUDA graph (warmed up first on a
        side stream, as CUDA graphs need); ``run`` itself when capture
        fails (an op that synchronises with the host), with the reason in
        ``capture_failure``.

        One capture at a time in the process, and in CUDA's thread-local
        mode: runs of other schedules (a user calling an executable from
        several threads) go on while one thread captures, where the global
        mode made their synchronising calls fail."""
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream(self.device)
        with _CAPTURE_LOCK:
            side.wait_stream(torch.cuda.current_stream(self.device))
            try:
                with torch.no_grad():
                    with torch.cuda.stream(side):
                        run()
                    torch.cuda.current_stream(self.device).wait_stream(side)
                    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                        run()
            except (RuntimeError, ExecutionError) as error:
                self.capture_failure = str(error).splitlines()[0]
                torch.cuda.synchronize(self.device)
                return run
        return graph.replay

    def copy_out(self, handle):
        if self.host_memory:
            return handle.copy()
        return self._tensor(handle).contiguous().cpu().numpy()  # channels-last comes back NCHW

    def duplicate(self, handle, shape, dtype):
        if self.host_memory:
            return handle.copy()
        return Slot(shape, handle.dtype, self._tensor(handle).clone())

    def free(self, handle) -> None:
        if isinstance(handle, Slot):
            handle.tensor = None

    def copy_buffer(self, to, source) -> None:
        if self.host_memory:
            super().copy_buffer(to, source)
            return
        value = self._tensor(source)
        if to.tensor is not None and to.tensor.shape == value.shape and to.tensor.dtype == to.dtype:
            to.tensor.copy_(value)  # into its own memory, where a captured graph reads
        else:
            to.fill(value.clone())

    # tensors of the caller's (device_arrays.py) -------------------------------
    def adopt(self, array):
        """A tensor on this CUDA device (torch, or any DLPack producer:
        CuPy, JAX ...) taken as it is; detached, never written."""
        if self.host_memory:
            return None  # host arrays come as numpy arrays
        tensor = _cuda_tensor(array)
        if tensor is None or not tensor.is_cuda:
            return None
        if tensor.get_device() != self._index:  # asked every call: no torch.device made
            raise ArrayRefused(f"got a tensor on {tensor.device}, not on {self.device}, where "
                               "its nodes run", f"move it there first (tensor.to('{self.device}'))")
        dtype = _numpy_dtype(tensor.dtype)
        if dtype is None:
            raise ArrayRefused(f"got a tensor of {tensor.dtype}, a type hpvm programs do not take",
                               "convert it to the parameter's type (tensor.float() ...)")
        if tensor.requires_grad:
            tensor = tensor.detach()
        slot = Slot(tensor.shape, tensor.dtype, tensor)
        return slot, slot.shape, dtype

    def export(self, handle):
        """The buffer's tensor, as the buffer's type (a result kept in half
        precision widened)."""
        if self.host_memory:
            return None
        return self._tensor(handle)

    def held(self, handle):
        """The caller's tensor under ``handle``, known by the object, where
        its memory starts and its strides."""
        tensor = handle.tensor if isinstance(handle, Slot) else None
        if tensor is None:
            return None
        return ((id(tensor), tensor.data_ptr(), tensor.stride()),
                Slot(handle.shape, handle.dtype, tensor))

    def lend(self, handle):
        """An alias of the buffer's tensor (a captured replay's output) for
        the caller, counted by its memory's users (torch's storage use
        count, which every view of it raises); None for a buffer over a
        constant's memory, which the caller could write."""
        tensor = handle.tensor if isinstance(handle, Slot) else None
        if tensor is None or tensor.dtype != handle.dtype or _STORAGE_USERS is None:
            return None
        storage = tensor.untyped_storage()
        if storage.data_ptr() in self._constant_memory():
            return None
        handle.users = _STORAGE_USERS(storage._cdata)
        return tensor.detach()

    def lent(self, handle) -> bool:
        return _users(handle.tensor) > handle.users

    # running -----------------------------------------------------------------
    def launch(self, node: NodeRef, args: dict[str, Any]) -> None:
        plan = self._plan(node)
        if plan.constant is not None:
            self._store(args["value"], self._constant(str(node), plan.constant))
            return None
        dtype = torch.float32 if plan.int8 else torch.float16 if plan.half else self.compute_dtype
        inputs = {port: self._weight(plan.weights[port], dtype) if port in plan.weights
                  else self._compute(self._tensor(args[port], dtype), dtype)
                  for port in plan.inputs}
        target = args[plan.output]
        use_tf32 = plan.tf32 or (self.all_tf32 and plan.op in PRODUCT_OPS)
        if use_tf32 and self.device.type != "cuda":
            inputs = tf32.rounded_operands(inputs, operands(plan.op))
        try:
            with torch.no_grad(), tf32.tensor_cores(self.device, use_tf32):
                result = self._integer_product(plan, inputs, tuple(target.shape))
                if result is None:
                    run_inputs = int8.dequantized(inputs, plan.int8) if plan.int8 else inputs
                    result = plan.run(run_inputs, plan.attrs, tuple(target.shape))
        except RuntimeError as error:
            raise ExecutionError(Diagnostic(
                Location(graph=node.graph, node=node.node),
                f"aten: {plan.op} failed: {str(error).splitlines()[0]}",
                "run this node on another target (cpu), or with precision='fp32'")) from None
        if isinstance(result, tuple):  # an op of several results (sort)
            for port, value in zip((plan.output,) + plan.more_outputs, result):
                self._store(args[port], value)
            return None
        self._store(target, result)
        return None

    # wait(): the default.  Launches queue on the device's stream in the
    # order the scheduler issues them (producers first), and copy_out
    # synchronises, so no launch needs waiting for on the host.

    # helpers -----------------------------------------------------------------
    def _integer_product(self, plan: "_Plan", inputs: dict, out_shape) -> torch.Tensor | None:
        """An INT8 gemm or matmul by a constant matrix through the integer
        GEMM on CUDA; None where that does not apply."""
        if (not plan.int8 or plan.op not in int8.MATRIX_OPS or self.device.type != "cuda"
                or "b" not in plan.weights or inputs["b"].dim() != 2):
            return None
        transposed = plan.op == "gemm" and plan.attrs["trans_b"]
        key = plan.weights["b"][0]
        if (key, "int8") not in self._constants:
            self._constants[(key, "int8")] = int8.integer_rhs(inputs["b"], plan.int8["b"],
                                                              transposed)
        scales = (plan.int8["a"], plan.int8["b"])
        factors_key = (key, "int8 factors", scales, plan.attrs.get("alpha"),
                       plan.attrs.get("beta"))
        if factors_key not in self._constants:
            self._constants[factors_key] = int8.integer_factors(scales, plan.attrs, plan.op,
                                                                self.device)
        columns = inputs["b"].shape[0 if transposed else 1]
        return int8.integer_product(plan.op, inputs["a"], self._constants[(key, "int8")],
                                    columns, self._constants[factors_key], plan.attrs,
                                    inputs.get("c"), out_shape)

    def _plan(self, node: NodeRef) -> "_Plan":
        """What launching ``node`` needs, worked out on its first launch."""
        plan = self._plans.get(node)
        if plan is None:
            plan = self._plans[node] = _Plan.of(self.module, node)
        return plan

    def _tensor(self, handle, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The handle's tensor (a float slot's as ``dtype`` when given)."""
        if isinstance(handle, np.ndarray):
            return torch.from_numpy(handle)
        if handle.tensor is None:  # read before written: zeros, as allocate promises
            handle.tensor = torch.zeros(handle.shape, dtype=handle.dtype, device=self.device)
        return handle.read(dtype if dtype is not None and handle.dtype.is_floating_point
                           else None)

    @staticmethod
    def _store(handle, result: torch.Tensor) -> None:
        if isinstance(handle, Slot):
            handle.fill(result)
        else:
            torch.from_numpy(handle).copy_(result.reshape(handle.shape))

    @staticmethod
    def _compute(tensor: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
        if dtype is not None and tensor.is_floating_point():
            return tensor.to(dtype)
        return tensor

    def _constant_memory(self) -> set[int]:
        """Where the constants' tensors on this device start."""
        if self._constant_count != len(self._constants):
            self._constant_count = len(self._constants)
            self._constant_starts = {_memory(value) for value in self._constants.values()
                                     if isinstance(value, torch.Tensor)}
        return self._constant_starts

    def _constant(self, key: str, data: np.ndarray) -> torch.Tensor:
        """The constant's data on this device, copied there once."""
        if key not in self._constants:
            self._constants[key] = torch.from_numpy(np.array(data, order="C")).to(self.device)
        return self._constants[key]

    def _weight(self, source: tuple[str, np.ndarray], dtype: torch.dtype | None) -> torch.Tensor:
        """A constant input read straight from this device's copy, in the
        compute precision (cast once, not at every launch)."""
        key, data = source
        if (key, dtype) not in self._constants:
            weight = self._compute(self._constant(key, data), dtype)
            if weight.dim() == 4 and weight.is_cuda:  # a filter: cuDNN reads NHWC
                weight = weight.contiguous(memory_format=torch.channels_last)
            self._constants[(key, dtype)] = weight
        return self._constants[(key, dtype)]


@dataclass(frozen=True)
class _Plan:
    """A node's launch, prepared once: the op function and its resolved
    attributes, its ports, and the constant nodes feeding its inputs
    (port -> (constant's key, data)); ``constant`` for a ConstantBody node;
    ``half``: the node computes in FP16 (its precision attribute);
    ``int8``: operand -> scale of a node that computes in INT8; ``tf32``:
    the node computes in TF32."""

    op: str = ""
    run: Any = None
    attrs: dict = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    output: str = ""
    more_outputs: tuple[str, ...] = ()
    weights: dict = field(default_factory=dict)
    constant: np.ndarray | None = None
    half: bool = False
    int8: dict = field(default_factory=dict)
    tf32: bool = False

    @staticmethod
    def of(module: Module, node: NodeRef) -> "_Plan":
        graph = module.graph(node.graph)
        body = graph.node(node.node).body
        if isinstance(body, ConstantBody):
            return _Plan(constant=body.data)
        assert isinstance(body, TensorBody)
        from hpvm.ir.tensor_ops.int8 import node_scales
        from hpvm.ir.tensor_ops.precision import node_precision
        attrs = get_op(body.op, node.node).resolve_attrs(body.attrs)
        inputs = tuple(p.name for p in body.params if p.direction == "in")
        weights = {}
        for edge in graph.edges:
            source = graph.node(edge.src_node)
            if edge.dst_node == node.node and isinstance(source.body, ConstantBody):
                weights[edge.dst_port] = (str(NodeRef(node.graph, source.name)), source.body.data)
        output, *more = (p.name for p in body.params if p.direction == "out")
        precision = node_precision(graph.node(node.node))
        scales = node_scales(graph.node(node.node)) if precision == "int8" else {}
        return _Plan(body.op, OPS[body.op], attrs, inputs, output, tuple(more), weights,
                     half=precision == "fp16", int8=scales, tf32=precision == "tf32")


def _torch_dtype(dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype)).dtype


@functools.lru_cache(maxsize=None)
def _numpy_dtype(dtype: torch.dtype) -> np.dtype | None:
    """The numpy type of a torch type; None for one numpy has not (bfloat16)."""
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:
        return None


DLPACK_CUDA = (2, 13)
"""DLPack device types of CUDA memory: device, managed."""


def _cuda_tensor(array) -> torch.Tensor | None:
    """``array`` as a torch tensor over the same memory when it is one, or a
    DLPack producer in CUDA memory; None otherwise."""
    if isinstance(array, torch.Tensor):
        return array
    if not hasattr(array, "__dlpack_device__") or not hasattr(array, "__dlpack__"):
        return None
    try:
        kind, _ = array.__dlpack_device__()
        return torch.from_dlpack(array) if int(kind) in DLPACK_CUDA else None
    except (TypeError, ValueError, RuntimeError, BufferError):
        return None


