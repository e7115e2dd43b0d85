"""The demo program: a 3x3 box blur of an image, with a numpy reference.

Built in Python so that ``hpvm demo`` works from any install, whatever
files are around; ``hpvm demo --save DIR`` writes it as .hpvm text."""
from __future__ import annotations

import numpy as np

from ..ir.graph import BindIn, BindOut, Graph, KernelBody, Module, Node
from ..ir.kernel import (
    Assign, Const, Expr, For, InstanceId, Intrinsic, KernelFunction, Let, Load, Store, Var,
)
from ..ir.parameter import Parameter
from ..ir.types import F32, I64, BufferType

IMAGE = BufferType(F32, ("H", "W"))
RADIUS = 1


def _clamp(index: Expr, size: Expr) -> Expr:
    """``index`` clamped to ``0 .. size-1`` (edge pixels repeat)."""
    return Intrinsic("min", (Intrinsic("max", (index, Const(0, I64))), size - 1))


def blur_kernel() -> KernelFunction:
    """One instance per pixel (y, x): the mean of its 3x3 neighbourhood."""
    y, x = Var("y", I64), Var("x", I64)
    acc = Var("acc", F32)
    pixel = Load("image", (_clamp(y + Var("dy", I64), Var("H", I64)),
                           _clamp(x + Var("dx", I64), Var("W", I64))), F32)
    window_area = Const(float((2 * RADIUS + 1) ** 2), F32)
    loop_x = For("dx", Const(-RADIUS, I64), Const(RADIUS + 1, I64), 1,
                 (Assign("acc", acc + pixel),))
    loop_y = For("dy", Const(-RADIUS, I64), Const(RADIUS + 1, I64), 1, (loop_x,))
    body = (
        Let("y", I64, InstanceId(0)),
        Let("x", I64, InstanceId(1)),
        Let("acc", F32, Const(0.0, F32)),
        loop_y,
        Store("blurred", (y, x), acc / window_area),
    )
    params = (Parameter("image", IMAGE, "in", restrict=True),
              Parameter("blurred", IMAGE, "out", restrict=True))
    return KernelFunction("blur", params, body)


def blur_module() -> Module:
    """Root graph ``main(image) -> blurred`` with one node replicated H x W."""
    node = Node("blur", KernelBody("blur"), replication=(Var("H", I64), Var("W", I64)))
    graph = Graph(
        "main",
        params=(Parameter("image", IMAGE, "in"), Parameter("blurred", IMAGE, "out")),
        nodes=(node,),
        bind_ins=(BindIn("image", "blur", "image"),),
        bind_outs=(BindOut("blur", "blurred", "blurred"),),
    )
    return Module("blur", {"blur": blur_kernel()}, {"main": graph}, root="main")


def blur_inputs(height: int, width: int, seed: int = 0) -> dict[str, np.ndarray]:
    """A reproducible random image."""
    rng = np.random.default_rng(seed)
    return {"image": rng.random((height, width), dtype=np.float32)}


def blur_reference(image: np.ndarray) -> np.ndarray:
    """What the kernel computes, in numpy, summing in the kernel's order."""
    height, width = image.shape
    padded = np.pad(image, RADIUS, mode="edge")
    acc = np.zeros_like(image)
    for dy in range(2 * RADIUS + 1):
        for dx in range(2 * RADIUS + 1):
            acc = acc + padded[dy:dy + height, dx:dx + width]
    return acc / np.float32((2 * RADIUS + 1) ** 2)
