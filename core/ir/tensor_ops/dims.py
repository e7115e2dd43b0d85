"""Shape arithmetic on dims that are ints or shape-symbol names.

Two dims are known equal when they are the same int or the same symbol; a
symbol and an int are never assumed equal.  A result dim must itself be an
int or a symbol of the inputs (so that the output can be allocated from the
inputs' shapes); otherwise the op reports an error naming the fix.
"""
from __future__ import annotations

from collections import Counter

from ..types import Dim
from .spec import OpContext


def describe(dim: Dim) -> str:
    return f"'{dim}'" if isinstance(dim, str) else str(dim)


def require_equal(ctx: OpContext, a: Dim, b: Dim, what_a: str, what_b: str, port: str) -> None:
    """Error unless dims ``a`` and ``b`` are known to be equal."""
    if a != b:
        ctx.fail(f"{what_a} is {describe(a)} but {what_b} is {describe(b)}",
                 "make the two sizes equal (the same number or the same shape symbol)", port)


def require_concrete(ctx: OpContext, dim: Dim, what: str, port: str) -> int:
    if not isinstance(dim, int):
        ctx.fail(f"{what} must be a fixed size, got symbol '{dim}'",
                 f"give '{port}' a concrete size there", port)
    return dim


def broadcast_shape(ctx: OpContext, ports: tuple[str, ...], shapes=None) -> tuple[Dim, ...]:
    """The numpy/ONNX multidirectional broadcast of the ports' shapes (or of
    ``shapes``, one per port, e.g. the batch dims of a matmul)."""
    shapes = shapes if shapes is not None else [ctx.shape(p) for p in ports]
    if not shapes or max(len(s) for s in shapes) == 0:
        return ()
    rank = max(len(s) for s in shapes)
    result: list[Dim] = []
    for axis in range(rank):
        dim: Dim = 1
        for port, shape in zip(ports, shapes):
            here = shape[axis - rank + len(shape)] if axis >= rank - len(shape) else 1
            if here == 1 or here == dim:
                continue
            if dim != 1:
                ctx.fail(f"cannot broadcast '{port}' {ctx.types[port]} with the other inputs: "
                         f"dimension {axis} (from the right: {rank - axis}) is {describe(here)} "
                         f"but another input has {describe(dim)}",
                         "make the sizes equal, or 1 on one side", port)
            dim = here
        result.append(dim)
    return tuple(result)


def window_dim(ctx: OpContext, size: Dim, window: int, stride: int, pad: int,
               what: str, port: str) -> Dim:
    """Output length of a sliding window (conv, pool) over ``size``, padded
    by ``pad`` in total; ``window`` is the dilated kernel extent."""
    if isinstance(size, str):
        if stride == 1 and pad == window - 1:
            return size
        ctx.fail(f"{what} of '{port}' is the symbol '{size}', so the output {what} "
                 f"(({size} + {pad} - {window}) / {stride} + 1) has no name",
                 f"give '{port}' a fixed {what}, or use stride 1 with padding that keeps "
                 f"the size ({window - 1} in total)", port)
    out = (size + pad - window) // stride + 1
    if out < 1:
        ctx.fail(f"the window ({window}) is larger than the padded {what} of '{port}' "
                 f"({size} + {pad})", "use a smaller kernel or more padding", port)
    return out


def product(ctx: OpContext, dims, what: str, port: str) -> Dim:
    """The product of ``dims`` as one dim: an int, or a single symbol."""
    constant, symbols = split(dims)
    if not symbols:
        return constant
    if constant == 1 and sum(symbols.values()) == 1:
        return next(iter(symbols))
    ctx.fail(f"{what} is a product of sizes ({' * '.join(describe(d) for d in dims)}) "
             "that no single shape symbol names", f"give '{port}' fixed sizes there", port)


def split(dims) -> tuple[int, Counter]:
    """The int factor and the multiset of symbols of a product of dims."""
    constant, symbols = 1, Counter()
    for dim in dims:
        if isinstance(dim, str):
            symbols[dim] += 1
        else:
            constant *= dim
    return constant, symbols
