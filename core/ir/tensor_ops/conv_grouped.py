"""Grouped and depthwise convolutions (groups > 1) over flattened pixels,
for targets with vector units (``RegisterTiles.vectors``).

Each output channel of a grouped convolution reads only its group's
``C / groups`` input channels (one, for a depthwise convolution), so the
register tiles of the dense lowerings, which share each input value among
many output channels, have nothing to share.  Here the vector lanes run
across output pixels instead: an instance computes one output channel of
one image over a band of output rows, and its tiles are several vectors
of consecutive pixels that every tap (input channel, kernel row, kernel
column) multiplies by one weight.

The instance first copies the input rows its band reads into a private
array, zero in the padding, split into the stride's *phases*: phase
(a, b) holds the padded input's rows ``i * sh + a`` and columns
``j * sw + b``.  Output pixel (oh, ow) of tap (r, s) then reads phase
(r*dh mod sh, s*dw mod sw) at row oh + r*dh div sh and column
ow + s*dw div sw, so consecutive output columns read consecutive values
at any stride, and flattening the pixels at the phase's row pitch lets a
tile run across row ends (the columns past each row's end are computed
and dropped).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..kernel import ArrayDecl, Expr, InstanceId, Load
from .activation import Activation, apply_kernel, with_summand
from .lowering import KernelBuilder, add, div, in_range, mul
from .perforation import approximated
from .tiled import fixed_sizes, i64

PHASE_ELEMENTS = 16384
"""Largest private copy of input rows an instance makes (elements; 64 KiB
of f32, within a core's L2): larger images are cut into bands of rows."""


@dataclass(frozen=True)
class Plan:
    """How a node is lowered: ``band`` output rows per instance, ``bands``
    per image; the copy's phases have ``phase_rows`` rows of ``pitch``
    values; ``sizes``: x's C, H, W, w's four sizes and y's K, OH, OW."""

    sizes: tuple[int, ...]
    band: int
    bands: int
    phase_rows: int
    pitch: int

    @property
    def phase_size(self) -> int:
        return self.phase_rows * self.pitch

    @property
    def pixels(self) -> int:
        """The flat pixels a band's tiles cover."""
        return (self.band - 1) * self.pitch + self.sizes[-1]


def plan(b: KernelBuilder, stride, padding, dilation, groups: int) -> Plan | None:
    """The plan for this node, or None where the lowering does not suit:
    groups of 1, symbolic sizes, a target without vectors, approximations,
    or a filter too tall for the largest copy."""
    sizes = fixed_sizes(b.dims("x")[1:] + b.dims("w") + b.dims("y")[1:])
    if groups == 1 or sizes is None or not b.tiles.vectors or approximated(b.ctx):
        return None
    _, _, width, _, per_group, rows, _, _, out_h, _ = sizes
    (sh, sw), (_, left, _, right), (dh, _) = stride, padding, dilation
    pitch = -(-(width + left + right) // sw)

    def phase_rows(band: int) -> int:
        return -(-((band - 1) * sh + (rows - 1) * dh + 1) // sh)

    def elements(band: int) -> int:
        return per_group * sh * sw * phase_rows(band) * pitch

    for bands in range(1, out_h + 1):
        band = -(-out_h // bands)
        if elements(band) <= PHASE_ELEMENTS:
            return Plan(tuple(sizes), band, -(-out_h // band), phase_rows(band), pitch)
    return None


def lower_conv2d_grouped(b: KernelBuilder, stride, padding, dilation, groups: int,
                         activation: Activation) -> tuple[Expr, ...] | None:
    """One instance per image, output channel and band of rows (see the
    module's text); None when ``plan`` declines."""
    p = plan(b, stride, padding, dilation, groups)
    if p is None:
        return None
    channels, _, _, kernels, per_group, rows, cols, _, out_h, out_w = p.sizes
    (sh, sw), (dh, dw) = stride, dilation
    instance = b.let("i", InstanceId(0))
    band = b.let("band", instance % i64(p.bands)) if p.bands > 1 else i64(0)
    rest = b.let("rest", div(instance, i64(p.bands)))
    k = b.let("k", rest % i64(kernels))
    n = b.let("n", div(rest, i64(kernels)))
    oh0 = b.let("oh0", mul(band, i64(p.band)))
    first_channel = b.let("c0", mul(div(k, i64(kernels // groups)), i64(per_group)))
    phases = _copy_phases(b, p, n, first_channel, oh0, stride, padding)
    element = b.element("x")
    sums = b.fresh("sums")
    b.emit(ArrayDecl(sums, b.element("y"), (p.pixels,), "private", zeroed=per_group > 1))
    with b.loop("c", i64(per_group)) as c:
        channel = b.let("at", mul(c, i64(sh * sw * p.phase_size)))
        taps = [(b.let("wk", b.load("w", k, c, i64(r), i64(s))),
                 (r * dh % sh * sw + s * dw % sw) * p.phase_size
                 + r * dh // sh * p.pitch + s * dw // sw)
                for r in range(rows) for s in range(cols)]
        with b.loop("q", i64(p.pixels), unroll=1, ivdep=True) as q:
            total = Load(sums, (q,), element) if per_group > 1 else None
            for weight, offset in taps:
                term = weight * Load(phases, (add(channel, add(q, i64(offset))),), element)
                total = term if total is None else total + term
            b.store(sums, (q,), total)
    bias = b.let("bias", b.load("b", k)) if "b" in b.types else None
    with b.loop("oh", i64(p.band)) as oh:
        row = b.let("oh", add(oh0, oh))
        with b.guard(p.bands * p.band != out_h, row.lt(i64(out_h))):
            with b.loop("ow", i64(out_w), unroll=1, ivdep=True) as ow:
                value = Load(sums, (add(mul(oh, i64(p.pitch)), ow),), element)
                value = value if bias is None else value + bias
                at = (n, k, row, ow)
                b.store("y", at, apply_kernel(activation, with_summand(b, value, at)))
    return (mul(b.dim("x", 0), i64(kernels * p.bands)),)


def _copy_phases(b: KernelBuilder, p: Plan, n: Expr, first_channel: Expr, oh0: Expr, stride,
                 padding) -> str:
    """Declare the instance's zeroed private copy (``per_group`` channels
    of ``sh * sw`` phases) and copy the input values the band reads into
    it; returns its name."""
    _, height, width, _, per_group, *_ = p.sizes
    (sh, sw), (top, left, _, _) = stride, padding
    name = b.fresh("phases")
    b.emit(ArrayDecl(name, b.element("x"), (per_group * sh * sw * p.phase_size,),
                     "private"))
    row0 = b.let("row0", add(mul(oh0, i64(sh)), i64(-top)))
    with b.loop("c", i64(per_group)) as c:
        channel = b.let("cin", add(first_channel, c))
        for a in range(sh):
            with b.loop("pr", i64(p.phase_rows)) as i:
                ih = b.let("ih", add(row0, add(mul(i, i64(sh)), i64(a))))
                with b.when(in_range(ih, i64(height))):
                    for column in range(sw):
                        # phase columns j whose input column j*sw + column - left
                        # lies inside the image
                        first = max(0, -(-(left - column) // sw))
                        last = min(p.pitch, -(-(width + left - column) // sw))
                        base = b.let("to", add(mul(c, i64(sh * sw * p.phase_size)), add(
                            i64((a * sw + column) * p.phase_size), mul(i, i64(p.pitch)))))
                        # Kept a loop: fully unrolled (LLVM does so to a
                        # constant trip count before it vectorises), a copy
                        # at a stride of 2 was 56 scalar loads per row.
                        with b.loop("j", i64(last), start=i64(first), unroll=1,
                                    ivdep=True) as j:
                            iw = add(mul(j, i64(sw)), i64(column - left))
                            b.store(name, (add(base, j),), b.load("x", n, channel, ih, iw))
    return name
