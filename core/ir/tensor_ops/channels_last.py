"""Flat indices of NCHW activations stored NCHW or channels-last
(KernelBuilder.stored_channels_last), for lowerings that handle either:
a value (n, k, pixel) of an activation of ``channels`` channels and
``pixels`` pixels (H W) lies at (n C + k) P + pixel stored NCHW, at
(n P + pixel) C + k stored channels-last."""
from __future__ import annotations

from ..kernel import Expr
from .lowering import add, div, mul
from .tiled import i64


def activation_index(n: Expr, k: Expr, pixel: Expr, channels: int, pixels: int,
                     last: bool) -> Expr:
    """The flat index of value (n, k, pixel)."""
    if last:
        return add(mul(add(mul(n, i64(pixels)), pixel), i64(channels)), k)
    return add(mul(add(mul(n, i64(channels)), k), i64(pixels)), pixel)


def moved_index(at: Expr, channels: int, pixels: int, last: bool, to_last: bool) -> Expr:
    """The flat index, stored as ``to_last`` says, of the value at ``at``
    stored as ``last`` says."""
    if last == to_last:
        return at
    image = channels * pixels
    n, within = div(at, i64(image)), at % i64(image)
    if last:
        return activation_index(n, within % i64(channels), div(within, i64(channels)),
                                channels, pixels, False)
    return activation_index(n, div(within, i64(pixels)), within % i64(pixels), channels,
                            pixels, True)
