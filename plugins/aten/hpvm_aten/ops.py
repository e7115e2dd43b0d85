"""Tensor ops on ATen: one function per op, ``run(inputs, attrs, out_shape)
-> torch.Tensor``, with the semantics of hpvm.ir.tensor_ops (ONNX).

``inputs`` are torch tensors by port name; ``attrs`` the node's attributes
with defaults filled in; ``out_shape`` the shape of the result port (known
from the allocated buffer), used by the shape-only ops.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from hpvm.ir.tensor_ops.activation import clip_bounds
from hpvm.ir.tensor_ops.chain import function_arguments

from .primitive_ops import BINARY, PRIMITIVE_OPS, UNARY

OpFunction = Callable[[dict, dict, tuple], torch.Tensor]


def _activation(y: torch.Tensor, name) -> torch.Tensor:
    bounds = clip_bounds(name)
    if bounds is not None:
        return torch.clamp(y, *bounds)
    if name == "relu":
        return torch.relu(y)
    if name == "tanh":
        return torch.tanh(y)
    if name == "sigmoid":
        return torch.sigmoid(y)
    return y


def _pad(x: torch.Tensor, padding, value: float = 0.0) -> torch.Tensor:
    top, left, bottom, right = padding
    if not any(padding):
        return x
    return F.pad(x, (left, right, top, bottom), value=value)


def conv2d(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    weights = x["w"]
    if attrs["sample_filter"]:
        weights = _sampled_filter(weights, *attrs["sample_filter"])
    activation = attrs.get("activation", "none")
    if attrs["perforate_rows"] or attrs["perforate_cols"]:
        return _perforated_conv2d(x["x"], weights, x.get("b"), attrs, activation)
    top, left, bottom, right = attrs["padding"]
    if top == bottom and left == right:
        data, padding = x["x"], (top, left)
    else:
        data, padding = _pad(x["x"], attrs["padding"]), (0, 0)
    geometry = (tuple(attrs["stride"]), padding, tuple(attrs["dilation"]), attrs["groups"])
    if "z" in x:  # a residual summand, added before the activation
        return _activation(_convolve(data, weights, x.get("b"), geometry, "none") + x["z"],
                           activation)
    return _convolve(data, weights, x.get("b"), geometry, activation)


def _convolve(data: torch.Tensor, w: torch.Tensor, b, geometry: tuple,
              activation: str) -> torch.Tensor:
    """activation(conv2d(data, w) + b); ``geometry``: stride, padding,
    dilation, groups."""
    if data.is_cuda:
        # cuDNN's fast kernels read NHWC: in channels-last memory the
        # activations need no transposes, and bias + relu fuse in.
        data = data.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
        if activation == "relu":
            return torch.cudnn_convolution_relu(data, w, b, *geometry)
    return _activation(F.conv2d(data, w, b, *geometry), activation)


def _sampled_filter(w: torch.Tensor, every: int, offset: int) -> torch.Tensor:
    """hpvm.ir.tensor_ops.conv.sampled_filter on a torch tensor."""
    index = torch.arange(w[0].numel(), device=w.device).reshape(w.shape[1:])
    return w * ((index % every != offset).to(w.dtype) * (every / (every - 1)))


def _perforated_conv2d(data: torch.Tensor, w: torch.Tensor, b, attrs: dict,
                       activation: str) -> torch.Tensor:
    """The kept rows / columns only (compact, in order), as one strided
    convolution per kept residue class: for rows perforated (every k), the
    rows q, q + k, q + 2k ... of a kept residue q are a convolution with a
    k times larger stride over the input cropped by q strides (the crop
    folded into the padding).  With every = 2 there is one class per axis,
    whose result is the compact output itself."""
    top, left, bottom, right = attrs["padding"]
    (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
    rows, cols = w.shape[2:]
    full = [(data.shape[2] + top + bottom - dh * (rows - 1) - 1) // sh + 1,
            (data.shape[3] + left + right - dw * (cols - 1) - 1) // sw + 1]
    patterns = [attrs["perforate_rows"] or None, attrs["perforate_cols"] or None]
    classes = [_residues(size, pattern) for size, pattern in zip(full, patterns)]
    parts = []
    for q_row, row_step in classes[0]:
        for q_col, col_step in classes[1]:
            pads = (left - q_col * sw, right, top - q_row * sh, bottom)
            if pads[0] == pads[1] >= 0 and pads[2] == pads[3] >= 0:
                source, padding = data, (pads[2], pads[0])  # cuDNN pads, no copy
            else:
                source, padding = F.pad(data, pads), (0, 0)
            geometry = ((sh * row_step, sw * col_step), padding, (dh, dw), attrs["groups"])
            parts.append(((q_row, row_step), (q_col, col_step),
                          _convolve(source, w, b, geometry, activation)))
    if len(parts) == 1:
        return parts[0][2]
    sizes = [len(_kept(size, pattern)) for size, pattern in zip(full, patterns)]
    out = empty_in_layout(parts[0][2], parts[0][2].shape[:2] + tuple(sizes))
    for (q_row, _), (q_col, _), part in parts:
        # The class's positions q, q + k, ... sit every k - 1 compact positions.
        rows, cols = (_compact_slice(q, pattern, size) for q, pattern, size in (
            (q_row, patterns[0], part.shape[2]), (q_col, patterns[1], part.shape[3])))
        out[:, :, rows, cols] = part
    return out


def _compact_slice(q: int, pattern, count: int) -> slice:
    """Where the ``count`` positions q, q + every, ... of a kept class sit
    in the compact axis (every position when the axis is not perforated)."""
    from hpvm.ir.tensor_ops.perforation import compact_position
    if pattern is None:
        return slice(0, count)
    first, step = int(compact_position(q, *pattern)), pattern[0] - 1
    return slice(first, first + step * (count - 1) + 1, step)


def memory_layout(tensor: torch.Tensor) -> torch.memory_format:
    """``channels_last`` for a 4-D tensor laid out so, else the plain
    ``contiguous_format``."""
    channels_last = (tensor.dim() == 4 and not tensor.is_contiguous()
                     and tensor.is_contiguous(memory_format=torch.channels_last))
    return torch.channels_last if channels_last else torch.contiguous_format


def empty_in_layout(like: torch.Tensor, shape) -> torch.Tensor:
    """An empty tensor of ``shape`` in ``like``'s memory layout (channels
    last stays channels last: copies between layouts are slow)."""
    return torch.empty(tuple(shape), dtype=like.dtype, device=like.device,
                       memory_format=memory_layout(like))


def _kept(size: int, pattern) -> range | list:
    if pattern is None or size < 2:
        return range(size)
    return [i for i in range(size) if i % pattern[0] != pattern[1]]


def _residues(size: int, pattern) -> list[tuple[int, int]]:
    """(first position, step) of the strided classes covering the kept
    positions of an axis of ``size``."""
    if pattern is None or size < 2:
        return [(0, 1)]
    every, offset = pattern
    return [(q, every) for q in range(min(every, size)) if q != offset]


def perforation_fill(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """Strided copies, no gathers: the kept positions of each residue
    class q are every (every - 1)-th compact position, and go to every
    every-th real position; then each skipped position (every-th from the
    offset) is the mean of the positions beside it."""
    from hpvm.ir.tensor_ops.perforation import compact_position
    from .fill_kernel import fill
    values = x["x"]
    axis = attrs["axis"] % values.dim()
    every, offset, size = attrs["every"], attrs["offset"], attrs["size"]
    filled = fill(values, axis, every, offset, size, out_shape)  # one pass, on a GPU
    if filled is not None:
        return filled
    out = empty_in_layout(values, out_shape)
    if size < 2:
        out.copy_(values)
        return out

    def along(tensor, start, stop, step):
        index = [slice(None)] * tensor.dim()
        index[axis] = slice(start, stop, step)
        return tensor[tuple(index)]

    for q in range(min(every, size)):
        if q != offset:
            first = int(compact_position(q, every, offset))
            along(out, q, None, every).copy_(along(values, first, None, every - 1))
    skipped = range(offset, size, every)
    inner = [r for r in skipped if 0 < r < size - 1]
    if inner:
        start, stop = inner[0], inner[-1] + 1
        mean = (along(out, start - 1, stop - 1, every) + along(out, start + 1, stop + 1, every))
        along(out, start, stop, every).copy_(mean * 0.5)
    for edge, neighbour in ((0, 1), (size - 1, size - 2)):
        if edge in skipped:
            along(out, edge, edge + 1, 1).copy_(along(out, neighbour, neighbour + 1, 1))
    return out


def _sampled_windows(data: torch.Tensor, attrs: dict) -> list[torch.Tensor]:
    """The strided views of the window cells ``sample`` keeps (pools
    without padding)."""
    (kh, kw), (sh, sw) = attrs["kernel"], attrs["stride"]
    every, offset = attrs["sample"]
    out_h = (data.shape[2] - kh) // sh + 1
    out_w = (data.shape[3] - kw) // sw + 1
    return [data[:, :, r:r + sh * (out_h - 1) + 1:sh, s:s + sw * (out_w - 1) + 1:sw]
            for r in range(kh) for s in range(kw) if (r * kw + s) % every != offset]


def gemm(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    a = x["a"].t() if attrs["trans_a"] else x["a"]
    b = x["b"].t() if attrs["trans_b"] else x["b"]
    c = x.get("c")
    if c is None:
        y = a @ b if attrs["alpha"] == 1.0 else torch.mm(a, b) * attrs["alpha"]
    else:
        y = torch.addmm(c.expand(out_shape), a, b, beta=attrs["beta"], alpha=attrs["alpha"])
    return _activation(y, attrs.get("activation", "none"))


def bias_add(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    axis = attrs["axis"] % data.dim()
    return data + x["b"].reshape((-1,) + (1,) * (data.dim() - axis - 1))


def max_pool(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    if attrs["sample"]:
        return torch.stack(_sampled_windows(x["x"], attrs)).amax(0)
    data = _pad(x["x"], attrs["padding"], float("-inf"))
    kernel, stride = tuple(attrs["kernel"]), tuple(attrs["stride"])
    if data.is_cuda and kernel == stride and all(
            size % k == 0 for size, k in zip(data.shape[2:], kernel)):
        return _tiled_max(data, kernel)
    return F.max_pool2d(data, kernel, stride)


def _tiled_max(data: torch.Tensor, kernel) -> torch.Tensor:
    """Max pooling of windows that tile the image, as a reduction over
    the channels-last layout.  CUDA's max_pool2d also writes every
    maximum's int64 index, which costs twice the pooling itself."""
    n, c, h, w = data.shape
    kh, kw = kernel
    nhwc = data.permute(0, 2, 3, 1).reshape(n, h // kh, kh, w // kw, kw, c)
    return nhwc.amax(dim=(2, 4)).permute(0, 3, 1, 2)


def avg_pool(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    if attrs["sample"]:
        return torch.stack(_sampled_windows(x["x"], attrs)).mean(0)
    kernel, stride = tuple(attrs["kernel"]), tuple(attrs["stride"])
    total = F.avg_pool2d(_pad(x["x"], attrs["padding"]), kernel, stride)
    if attrs["count_include_pad"] or not any(attrs["padding"]):
        return total
    ones = torch.ones_like(x["x"][:1, :1])
    share = F.avg_pool2d(_pad(ones, attrs["padding"]), kernel, stride)
    return total / share


def batchnorm(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    return F.batch_norm(x["x"], x["mean"], x["var"], x["scale"], x["bias"],
                        training=False, eps=attrs["epsilon"])


def concat(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    parts = [x[f"x{i}"] for i in range(len(x))]
    return torch.cat(parts, dim=attrs["axis"])


def elementwise(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """The steps of a fused chain (hpvm.ir.tensor_ops.chain): one ATen op
    each on the CPU, one kernel on a GPU (fusion.py)."""
    inputs = tuple(x[f"x{i}"] for i in range(len(x)))
    if inputs[0].is_cuda:
        from .fusion import fused
        return fused(_chain, dynamic=None)(tuple(attrs["steps"]), *inputs)
    return _chain(tuple(attrs["steps"]), *inputs)


def _chain(steps: tuple, *inputs: torch.Tensor) -> torch.Tensor:
    value = inputs[0]
    for step in steps:
        name = step[0]
        if name == "add":
            value = value + inputs[step[1]]
        elif name == "mul":
            value = value * inputs[step[1]]
        elif name == "clipped_relu":
            value = torch.clamp(value, step[1], step[2])
        elif name == "unary":
            value = UNARY[step[1]](value)
        elif name in ("binary", "rbinary"):
            value = BINARY[step[1]](*function_arguments(step, value, inputs[step[2]]))
        else:
            value = _activation(value, name)
    return value


def rowwise(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """A program of elementwise functions and reductions along rows
    (hpvm.ir.tensor_ops.rowwise), one ATen op an instruction; on a GPU one
    kernel (fusion.py)."""
    inputs = tuple(x[f"x{i}"] for i in range(len(x)))
    program = (int(attrs["axes"]), tuple(attrs["program"]), tuple(out_shape))
    if inputs[0].is_cuda:
        from .fusion import fused
        return fused(_rowwise, dynamic=None)(program, *inputs)
    return _rowwise(program, *inputs)


_ROW_REDUCTIONS = {"sum": lambda rows: rows.sum(-1), "prod": lambda rows: rows.prod(-1),
                   "max": lambda rows: rows.amax(-1), "min": lambda rows: rows.amin(-1)}


def _rowwise(program: tuple, *inputs: torch.Tensor) -> torch.Tensor:
    axes, instructions, shape = program
    values: list[torch.Tensor] = []
    for instruction in instructions:
        name, args = instruction[0], instruction[1:]
        if name == "input":
            value = inputs[args[0]]
        elif name == "unary":
            a = values[args[1]]
            value = UNARY[args[0]](a) if args[0] in UNARY else _activation(a, args[0])
        elif name == "binary":
            value = BINARY[args[0]](values[args[1]], values[args[2]])
        elif name == "clip":
            value = torch.clamp(values[args[2]], args[0], args[1])
        elif name == "select":
            value = torch.where(values[args[0]].bool(), values[args[1]], values[args[2]])
        else:
            rows = values[args[1]].expand(shape).flatten(-axes)
            value = _ROW_REDUCTIONS[args[0]](rows).reshape(rows.shape[:-1] + (1,) * axes)
        values.append(value)
    return values[-1].expand(shape).contiguous()


def attention(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """rows(x0 @ x1) @ x2 (hpvm.ir.tensor_ops.attention): the row program
    as ``rowwise`` runs it, between two ATen products."""
    scores = torch.matmul(x["x0"], x["x1"])
    rows = {"x0": scores, **{f"x{k - 2}": x[f"x{k}"] for k in range(3, len(x))}}
    probabilities = rowwise(rows, {"axes": 1, "program": attrs["program"]}, scores.shape)
    return torch.matmul(probabilities, x["x2"])


def prelu(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    return torch.where(x["x"] < 0, x["x"] * x["slope"], x["x"])


def lrn(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """ONNX's window (floor((size-1)/2) channels before, ceil after), which
    torch's local_response_norm places differently for even sizes."""
    data = x["x"]
    size = attrs["size"]
    before, after = (size - 1) // 2, size // 2
    squares = F.pad((data * data).movedim(1, -1), (before, after)).movedim(-1, 1)
    window = sum(squares[:, k:k + data.shape[1]] for k in range(size))
    return data / (attrs["bias"] + attrs["alpha"] / size * window) ** attrs["beta"]


def slice_(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """Each sliced axis through index_select (torch slicing has no negative steps)."""
    from hpvm.ir.tensor_ops.shape_ops import clamped_ranges
    data = x["x"]
    for axis, (start, _, step, length) in clamped_ranges(tuple(data.shape), attrs).items():
        index = torch.arange(length, device=data.device) * step + start
        data = data.index_select(axis, index)
    return data


def transpose(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    data = x["x"]
    perm = attrs["perm"] or tuple(reversed(range(data.dim())))
    return data.permute(*perm).contiguous()


def pad(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    """torch's pad lists (leading, trailing) from the last axis backwards."""
    data = x["x"]
    rank = data.dim()
    pads = attrs["pads"]
    widths = [w for axis in reversed(range(rank)) for w in (pads[axis], pads[rank + axis])]
    mode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}[attrs["mode"]]
    if mode == "constant":
        return torch.nn.functional.pad(data, widths, value=attrs["value"])
    return _padded_spatially(data, widths, mode)


def _padded_spatially(data: torch.Tensor, widths: list, mode: str) -> torch.Tensor:
    """replicate and reflect pad only the trailing axes of a batched
    tensor: every padded axis is moved last, padded, and moved back."""
    rank = data.dim()
    for axis in range(rank):
        lead, trail = widths[2 * (rank - 1 - axis)], widths[2 * (rank - 1 - axis) + 1]
        if lead or trail:
            moved = data.movedim(axis, -1).unsqueeze(0)
            flat = moved.reshape(1, -1, moved.shape[-1])
            padded = torch.nn.functional.pad(flat, [lead, trail], mode=mode)
            data = padded.reshape(*moved.shape[1:-1], -1).movedim(-1, axis)
    return data.contiguous()


def _reshape(x: dict, attrs: dict, out_shape) -> torch.Tensor:
    return x["x"].reshape(tuple(out_shape))


OPS: dict[str, OpFunction] = {
    "conv2d": conv2d,
    "matmul": lambda x, attrs, shape: torch.matmul(x["a"], x["b"]),
    "attention": attention,
    "gemm": gemm,
    "add": lambda x, attrs, shape: torch.add(x["a"], x["b"]),
    "mul": lambda x, attrs, shape: torch.mul(x["a"], x["b"]),
    "bias_add": bias_add,
    "relu": lambda x, attrs, shape: torch.relu(x["x"]),
    "clipped_relu": lambda x, attrs, shape: torch.clamp(x["x"], attrs["min"], attrs["max"]),
    "tanh": lambda x, attrs, shape: torch.tanh(x["x"]),
    "sigmoid": lambda x, attrs, shape: torch.sigmoid(x["x"]),
    "max_pool": max_pool,
    "avg_pool": avg_pool,
    "softmax": lambda x, attrs, shape: torch.softmax(x["x"], dim=attrs["axis"]),
    "batchnorm": batchnorm,
    "lrn": lrn,
    "prelu": prelu,
    "reshape": _reshape,
    "flatten": _reshape,
    "concat": concat,
    "slice": slice_,
    "transpose": transpose,
    "pad": pad,
    "elementwise": elementwise,
    "rowwise": rowwise,
    "perforation_fill": perforation_fill,
    **PRIMITIVE_OPS,
}
