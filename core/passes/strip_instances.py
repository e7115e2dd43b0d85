"""A nest of two loops whose outer loop's iterations share what they write,
while its inner loop's do not, run as a loop over strips of the inner
loop's iterations: the strips are what loop-instances makes instances.

PolyBench's atax adds every row of ``A``, scaled, into ``y``::

    for i in 0 .. M { for j in 0 .. N { y[j] = y[j] + A[i, j] * tmp[i] } }

Every row updates all of ``y``, so the rows share; the columns do not.
One instance a column walks ``A`` a row apart at every step (one core
walking the rows was faster, even on two cores), and one instance for
the whole nest leaves the other cores idle. In strips of W columns, each
instance walks the rows of its strip, W adjacent elements at a time::

    for j_strip in 0 .. (N + W - 1) / W {
      for i in 0 .. M { for j in j_strip * W .. min(j_strip * W + W, N) { ... } }
    }

W is N divided among the machine's cores, rounded up to a multiple of
16, and at least WIDEST: one strip a core. On the H100's 16-core host at
4096^2 (benchmarks/RESULTS.md) strips of 128 to 256 ran atax's second
half, mvt's and gemver's 2.5-4x faster and column sums 5-12x; on two
cores strips that narrow lost 30-40% (512 bytes of a row, then a jump of
a row, which the prefetchers do not follow), and two strips of 2048 ran
as fast as one core walking whole rows, or faster.

Within a strip the iterations run in the order written, so every element
is computed as before, bit for bit. The caller has checked that the
inner loop may run outermost and that its iterations share nothing
(loop_instances._swapped_outward); then iterations of different strips
share nothing either. It applies to a perfect nest of two loops stepping
by 1 whose inner loop holds no loop and reads and writes every buffer at
elements adjacent from one iteration to the next, or at one element
throughout.
"""
from __future__ import annotations

import dataclasses

from ..ir.kernel import Const, For, Intrinsic, KernelFunction, Load, Store, Var
from ..ir.reduction import reads_variable
from ..ir.strides import IndexStrides, loop_variable
from ..ir.types import I64
from ..ir.visit import walk
from .names import function_names, unique_name
from .reduce_forms import as_i64, offset

WIDEST = 256
"""The fewest iterations of the inner loop a strip runs (1 KiB of f32 a
row), unless the loop has fewer."""


def in_strips(loop: For, function: KernelFunction, cores: int) -> For | None:
    """``loop`` (of ``function``) as a loop over strips of its inner
    loop's iterations, one for each of ``cores`` (module docstring); None
    where ``loop`` is not a perfect nest of two loops stepping by 1, the
    inner one's bounds apart from the outer one, that walks its buffers
    along itself."""
    if len(loop.body) != 1 or not isinstance(loop.body[0], For):
        return None
    inner = loop.body[0]
    if loop.step != 1 or inner.step != 1 or any(isinstance(n, For) for n in walk(inner.body)) \
            or reads_variable((inner.start, inner.stop), loop.var):
        return None
    strides = IndexStrides(loop.body)
    along = [strides.element_stride(n.indices, loop_variable(inner.var))
             for n in walk(inner.body) if isinstance(n, (Load, Store))]
    if 1 not in along or not set(along) <= {0, 1}:
        return None
    strip = Var(unique_name(f"{inner.var}_strip", function_names(function)), I64)
    start, stop = as_i64(inner.start), as_i64(inner.stop)
    span = stop if isinstance(start, Const) and start.value == 0 else stop - start
    width = Intrinsic("max", (Const(WIDEST, I64), (span + (16 * cores - 1)) / (16 * cores) * 16))
    first = offset(start, strip * width, 1)
    rows = dataclasses.replace(loop, body=(dataclasses.replace(
        inner, start=first, stop=Intrinsic("min", (first + width, stop))),))
    return For(strip.name, Const(0, I64), (span + width - 1) / width, 1, (rows,))
