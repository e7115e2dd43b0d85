"""The tensor-op contract: what every op declares and what it can do.

A :class:`TensorOpSpec` names an op's ports (required ``inputs``,
``optional_inputs``, ``outputs``) and its attributes with their defaults
(:data:`REQUIRED` marks an attribute without one).  Three behaviours come
with it:

- ``infer(input_types, attrs)``: the output BufferTypes (shape inference;
  shape symbols such as a batch ``"N"`` pass through);
- ``evaluate(inputs, attrs)``: the reference result on numpy arrays, with
  ONNX semantics;
- ``lower(node_name, body)``: a KernelFunction computing the same values,
  plus the replication of the node that runs it.

Each op supplies these as small functions of an :class:`OpContext`, which
holds the checked attributes and input types of one use of the op and
raises VerificationError naming the op, the node and the port.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from ...errors import ExecutionError, VerificationError
from ..graph import TensorBody
from ..kernel import Expr, KernelFunction
from ..types import BufferType, scalar_type_of_dtype
from . import storage
from .context import OpContext
from .lowering import KernelBuilder, RegisterTiles


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()
"""Default of an attribute that every use of the op must give."""


class Lowered(NamedTuple):
    """An op's lowering: the kernel, the node's replication, the arrays it
    reads at ports fed by constants instead of those constants
    (KernelBuilder.relayout: weights packed once when compiling), and the
    ``pads`` of the inputs it reads zero-padded (KernelBuilder.read_padded:
    the caller pads them before each launch), and the ports whose
    activations it reads or writes stored channels-last
    (KernelBuilder.stored_channels_last)."""

    function: KernelFunction
    replication: tuple[Expr, ...]
    relaid: Mapping[str, np.ndarray]
    padded: Mapping[str, tuple[int, ...]] = {}
    channels_last: frozenset[str] = frozenset()


def normalize_attr(value):
    """An attribute value in IR form: lists become tuples, numpy scalars
    Python numbers."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(normalize_attr(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass(frozen=True, eq=False)
class TensorOpSpec:
    """A tensor op.

    ``variadic`` ops take the ports ``x0, x1, ... xk`` (k >= 0); their
    ``inputs`` is ``("x0",)``.  ``infer_fn(ctx)`` returns output types,
    ``evaluate_fn(ctx, arrays)`` output arrays, and ``lower_fn(builder)``
    emits the kernel body through a lowering.KernelBuilder and returns the
    replication.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    infer_fn: Callable[[OpContext], dict[str, BufferType]]
    evaluate_fn: Callable[[OpContext, dict[str, np.ndarray]], dict[str, np.ndarray]]
    lower_fn: Callable[[Any], tuple[Expr, ...]]
    optional_inputs: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    variadic: bool = False
    summary: str = ""
    moves_bits: bool = False
    """The op moves the bits of its elements (bitcast): narrow types are
    not widened around it (storage.py)."""
    layout_ports: tuple[str, ...] = ()
    """Ports of NCHW activations that some of its lowerings can read or
    write stored channels-last (KernelBuilder.stored_channels_last)."""

    # the public behaviours ----------------------------------------------
    def infer(self, input_types: Mapping[str, BufferType], attrs: Mapping | None = None,
              node: str | None = None) -> dict[str, BufferType]:
        """Output port -> BufferType for these inputs; VerificationError
        (naming ``node`` when given) if they do not fit the op."""
        return self.infer_fn(self.context(input_types, attrs, node))

    def evaluate(self, inputs: Mapping[str, np.ndarray], attrs: Mapping | None = None,
                 node: str | None = None) -> dict[str, np.ndarray]:
        """Output port -> array: the reference semantics.  Bad inputs raise
        ExecutionError."""
        arrays = {port: np.asarray(value) for port, value in inputs.items()}
        try:
            types = {port: _array_type(self, port, a, node) for port, a in arrays.items()}
            ctx = self.context(types, attrs, node)
            out_types = self.infer_fn(ctx)
        except VerificationError as error:
            raise ExecutionError(error.diagnostics) from None
        if not self.moves_bits and storage.has_narrow([*types.values(), *out_types.values()]):
            return self._evaluate_widened(arrays, ctx, out_types, node)
        ordered = {port: arrays[port] for port in ctx.types}
        with np.errstate(all="ignore"):  # inf and NaN results are values like any other
            results = self.evaluate_fn(ctx, ordered)
        return {port: np.asarray(results[port], dtype=out_types[port].element.numpy_dtype)
                for port in self.outputs}

    def _evaluate_widened(self, arrays: dict, ctx: OpContext, out_types: dict,
                          node: str | None) -> dict[str, np.ndarray]:
        """The op on narrow values: in their compute types, the results
        rounded back (storage.py)."""
        wide = self.evaluate({port: storage.widen_array(a) for port, a in arrays.items()},
                             storage.widened_attrs(self.name, ctx.attrs), node)
        saturate = storage.saturates(self.name, ctx.attrs)
        return {port: storage.narrow_array(wide[port], t.element, saturate)
                if t.element.is_narrow else wide[port] for port, t in out_types.items()}

    def lower(self, node_name: str, body: TensorBody,
              tiles=None) -> tuple[KernelFunction, tuple[Expr, ...]]:
        """The reference lowering of node ``node_name``: a kernel named
        ``{node_name}_{op}`` whose params are exactly ``body.params``, and the
        node's replication (expressions over its shape symbols).  ``tiles``
        (lowering.RegisterTiles) shapes the register-tiled lowerings."""
        lowered = self.lower_with_constants(node_name, body, tiles)
        return lowered.function, lowered.replication

    def lower_with_constants(self, node_name: str, body: TensorBody, tiles=None,
                             constants: Mapping[str, np.ndarray] | None = None,
                             pads_inputs: bool = False,
                             channels_last: frozenset[str] = frozenset()) -> Lowered:
        """``lower``, told the arrays constant nodes feed into input ports
        (``constants``): the lowering may then read a rearranged copy at
        such a port instead (``Lowered.relaid``; that param has the
        copy's type), which the caller feeds the port.  With
        ``pads_inputs``, it may read an input zero-padded
        (``Lowered.padded``; that param has the padded type), which the
        caller pads before each launch.  ``channels_last``: ports of
        ``layout_ports`` whose values are stored channels-last (NHWC); the
        lowering honours them or not (``Lowered.channels_last``)."""
        ctx = self.context(self._body_inputs(node_name, body), body.attrs, node_name)
        self._check_outputs(ctx, body)
        if not self.moves_bits and storage.has_narrow(p.type for p in body.params):
            function, replication = self.lower(node_name, storage.widened_body(body), tiles)
            try:
                return Lowered(storage.narrowed_kernel(function, body.params, storage.saturates(
                    self.name, ctx.attrs)), replication, {})
            except ValueError as error:
                ctx.fail(f"{self.name} on narrow types: {error}",
                         "cast the narrow values to f32 before the op")
        builder = KernelBuilder(ctx, body.params, tiles or RegisterTiles(), constants,
                                pads_inputs, channels_last)
        replication = self.lower_fn(builder)
        function = KernelFunction(f"{node_name}_{self.name}", builder.params(), builder.finish())
        return Lowered(function, replication, builder.relaid, builder.padded,
                       frozenset(builder.honoured))

    # checking a use -----------------------------------------------------
    def context(self, input_types: Mapping[str, BufferType], attrs: Mapping | None = None,
                node: str | None = None) -> OpContext:
        """An OpContext with ports and attributes checked and defaults
        filled in."""
        ctx = OpContext(self, {}, {}, node)
        ctx.attrs = self.resolve_attrs(attrs, ctx)
        ctx.types = self._checked_ports(input_types, ctx)
        return ctx

    def resolve_attrs(self, attrs: Mapping | None, ctx: OpContext | None = None) -> dict:
        """``attrs`` normalised, with defaults for the missing ones."""
        ctx = ctx or OpContext(self, {}, {})
        given = {name: normalize_attr(v) for name, v in (attrs or {}).items()}
        allowed = ", ".join(self.attrs) or "(none)"
        for name in given:
            if name not in self.attrs:
                ctx.fail(f"unknown attribute '{name}'; allowed attributes: {allowed}",
                         f"remove '{name}' or use one of: {allowed}")
        resolved = {**self.attrs, **given}
        for name, value in resolved.items():
            if value is REQUIRED:
                ctx.fail(f"attribute '{name}' is required", f"give a value for '{name}'")
        return resolved

    def input_names(self, count: int = 1) -> tuple[str, ...]:
        """All input port names, in order (``count`` ports of a variadic op)."""
        if self.variadic:
            return tuple(f"x{i}" for i in range(count))
        return self.inputs + self.optional_inputs

    def is_input_port(self, port: str) -> bool:
        """True if ``port`` names an input of this op (``x<k>`` of a
        variadic op)."""
        if self.variadic:
            return port[:1] == "x" and port[1:].isdigit() and str(int(port[1:])) == port[1:]
        return port in self.inputs or port in self.optional_inputs

    def _checked_ports(self, types: Mapping[str, BufferType], ctx: OpContext) -> dict:
        order = self.input_names(len(types))
        allowed = "x0, x1, ..." if self.variadic else ", ".join(order)
        for port in types:
            if port not in order:
                if self.is_input_port(port):
                    ctx.fail(f"inputs must be numbered x0 to x{len(types) - 1} without "
                             f"gaps, got '{port}'", "renumber the inputs from x0", port)
                ctx.fail(f"has no input port '{port}'; its inputs are {allowed}",
                         f"rename '{port}' to one of: {allowed}", port)
        required = order if self.variadic else self.inputs
        for port in required:
            if port not in types:
                ctx.fail(f"input '{port}' is missing", f"connect a buffer to '{port}'", port)
        for port, t in types.items():
            if not isinstance(t, BufferType) or t.shape is None:
                ctx.fail(f"input '{port}' must be a buffer with a shape, got {t}",
                         "give the port a shaped buffer type such as f32[N, 16]", port)
        return {port: types[port] for port in order if port in types}

    def _body_inputs(self, node: str, body: TensorBody) -> dict[str, BufferType]:
        ctx = OpContext(self, {}, {}, node)
        if body.op != self.name:
            ctx.fail(f"cannot lower a '{body.op}' node", f"use TENSOR_OPS['{body.op}']")
        inputs = {}
        for p in body.params:
            if p.name in self.outputs:
                if p.direction != "out":
                    ctx.fail(f"result '{p.name}' must be an out port", "", p.name)
            elif p.direction != "in":
                ctx.fail(f"input '{p.name}' must be an in port", "", p.name)
            else:
                inputs[p.name] = p.type
        return inputs

    def _check_outputs(self, ctx: OpContext, body: TensorBody) -> None:
        expected = self.infer_fn(ctx)
        given = {p.name: p.type for p in body.params if p.direction == "out"}
        for port, t in expected.items():
            if port not in given:
                ctx.fail(f"result '{port}' is missing", f"add out port {port}: {t}", port)
            if given[port] != t:
                ctx.fail(f"result '{port}' is declared {given[port]} but the op makes {t}",
                         f"declare '{port}' as {t}", port)


def _array_type(spec: TensorOpSpec, port: str, array: np.ndarray, node) -> BufferType:
    try:
        element = scalar_type_of_dtype(array.dtype)
    except ValueError as error:
        OpContext(spec, {}, {}, node).fail(f"input '{port}': {error}", "", port)
    return BufferType(element, tuple(int(d) for d in array.shape))
