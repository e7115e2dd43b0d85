"""INT8 on NVDLA: calibration, quantisation, and the engines' integer
arithmetic, bit for bit.

Scales.  Every tensor value ``v`` has one scale ``s(v)`` (real = q *
s(v), q an int8 in [-127, 127]) from calibration: the interpreter runs the
program on the calibration batches and ``s(v) = a / 127`` with ``a`` the
largest magnitude of ``v`` (method ``max``) or that percentile of its
magnitudes (``percentile``).  The scales are the calibration table
(``calibration.json`` in the artifact; the ``calibration_table`` option
reads one or writes it).  Pooling, flatten and channel slices keep their input's scale.

Weights are quantised per output channel: ``sw[k] = max|w[k]| / 127``,
``qw = round(w / sw)``; the bias to the accumulator's scale ``sa[k] =
s(x) * sw[k]`` as int32.  ``round`` is half away from zero throughout.

The integer pipeline of a layer (what :func:`run_int8` computes):

1. CMAC/CACC: ``acc[k] = sum(qx * qw[k]) + qb[k]`` in int64 (the
   hardware's 32-bit accumulators never overflow on these sizes: checked).
   An SDP-only layer starts from ``acc = qx << 8`` at ``sa = s(x) / 256``.
2. SDP, each step in the accumulator's domain: ``add_channel c``:
   ``acc += round(c / sa)``; ``mul_channel m``: ``acc = rshift(acc * M,
   n)`` with the fixed-point ``M / 2**n`` of ``m``; ``add_tensor v``: ``acc
   += rshift(qv * M, n)`` with ``M / 2**n`` of ``s(v) / sa``; ``mul_tensor
   v``: ``acc *= qv`` and ``sa *= s(v)``; ``relu``: ``max(acc, 0)``;
   ``clip``: clamp to the bounds rounded to ``sa``; ``prelu s``: negative
   values become ``rshift(acc * M, n)`` with ``M / 2**n`` of the channel's
   slope; ``sigmoid`` / ``tanh``:
   requantise to int8 at the table's input scale ``LUT_RANGE / 127``, read
   the 256-entry table (built from the same function) giving int8 at the
   output's scale (``1/127`` when more steps follow), and go on at that
   scale.
3. The output converter: ``q = clamp(rshift(acc * M[k], n[k]), -128,
   127)`` with ``M[k] / 2**n[k]`` of ``sa[k] / s(out)``.

``rshift(a, n) = (a + 2**(n-1)) >> n`` (arithmetic, rounding half up);
``M`` is a 16-bit signed multiplier (``2**14 <= |M| < 2**15``) and ``n``
its shift, as SDP's multiplier-and-shift units take them.  PDP max is
exact on int8; average sums in int32 and divides with rounding half up.
CDP (LRN) sums the exact integer squares of its window, evaluates its
power term (a lookup table in hardware) in float64, and requantises with
rounding and saturation.
Concatenation requantises each input to the output's scale.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hpvm.errors import TargetError
from hpvm.ir.graph import Module

from .emulator import LUT_RANGE, channel_slice, core, lookup, lrn, pool
from .layers import Layer

QMAX = 127
SDP_WIDEN = 8
"""An SDP-only layer widens its int8 input by this many bits first (its
operands are 16-bit), so its steps round at 1/256 of the input's scale."""
TABLE_FORMAT = "hpvm-nvdla-calibration"


# calibration ----------------------------------------------------------------
@dataclass
class Scales:
    """Scale per value (``graph/node.port``, or ``graph/param`` for the
    root graph's inputs), with how they were found."""

    values: dict[str, float]
    method: str

    def to_json(self) -> str:
        return json.dumps({"format": TABLE_FORMAT, "version": 1, "method": self.method,
                           "scales": self.values}, indent=1, sort_keys=True)

    @classmethod
    def from_file(cls, path: Path) -> "Scales":
        try:
            data = json.loads(path.read_text())
            if data.get("format") != TABLE_FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, not {TABLE_FORMAT!r}")
            return cls({k: float(v) for k, v in data["scales"].items()}, data["method"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise TargetError(f"nvdla: calibration table {path} cannot be read ({error}); "
                              "delete it to calibrate again") from None


def calibrate_or_read(module: Module, options: dict) -> Scales:
    """The scales: from ``calibration_table`` when that file exists, else
    from ``calibration`` batches (written to ``calibration_table`` if
    named)."""
    table = Path(options["calibration_table"]) if options.get("calibration_table") else None
    if table is not None and table.exists():
        return Scales.from_file(table)
    batches = options.get("calibration")
    if isinstance(batches, (str, Path)):
        batches = _read_npz(Path(batches))
    if batches is None:
        raise TargetError("nvdla: precision='int8' needs calibration data: pass "
                          "options={'calibration': {input name: array, ...}} (or a list of "
                          "such batches), or calibration_table='scales.json'")
    scales = calibrate(module, batches, options.get("calibration_method", "max"),
                       float(options.get("percentile", 99.99)))
    if table is not None:
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text(scales.to_json())
    return scales


def _read_npz(path: Path) -> dict:
    """Calibration inputs from a .npz file of arrays by input name (the
    form ``-O calibration=calib.npz`` gives on the command line)."""
    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError) as error:
        raise TargetError(f"nvdla: calibration file {path} cannot be read ({error}); give an "
                          ".npz of arrays by input name") from None


def calibrate(module: Module, batches, method: str, percentile: float) -> Scales:
    from hpvm.errors import HpvmError
    from hpvm.interp.calibration import value_magnitudes
    try:
        magnitudes = value_magnitudes(module, batches, method, percentile)
    except HpvmError as error:
        raise TargetError(f"nvdla: {error}") from None
    values = {key: (amax if amax > 0 else 1.0) / QMAX for key, amax in magnitudes.items()}
    return Scales(values, method if method == "max" else f"percentile {percentile}")


# quantisation ---------------------------------------------------------------
def fixed_point(ratio: float) -> tuple[int, int]:
    """(M, n): a 16-bit signed multiplier and a shift with M / 2**n ~ ratio."""
    if ratio == 0 or not math.isfinite(ratio):
        return 0, 0
    shift = 14 - math.floor(math.log2(abs(ratio)))
    multiplier = round_away(ratio * 2.0 ** shift)
    if abs(multiplier) >= 2 ** 15:
        multiplier, shift = round_away(ratio * 2.0 ** (shift - 1)), shift - 1
    if shift < 0:
        return int(round_away(ratio)), 0
    return int(multiplier), min(shift, 62)


def round_away(x):
    """Round half away from zero (scalars or arrays)."""
    return np.trunc(np.asarray(x, np.float64) + np.copysign(0.5, x)).astype(np.int64) \
        if isinstance(x, np.ndarray) else int(math.copysign(math.floor(abs(x) + 0.5), x))


def rshift(a: np.ndarray, n) -> np.ndarray:
    n = np.asarray(n, np.int64)
    half = np.where(n > 0, np.left_shift(np.int64(1), np.maximum(n - 1, 0)), 0)
    return np.right_shift(a + half, n)


def quantize(layers: list[Layer], scales: Scales, view,
             sources: dict[str, str]) -> tuple[list[Layer], dict]:
    """``layers`` with their integer parameters (``attrs["q"]``) and the
    header entries (each value's scale) of the INT8 loadable;
    ``sources``: each in port of the launch -> its value's calibration key."""
    graph = view.graph.name
    value_scale = {}
    for port, key in sources.items():
        if key not in scales.values:
            raise TargetError(f"nvdla: no INT8 scale for input '{port}' ({key}); calibrate "
                              "again (the calibration table is for another program)")
        value_scale[port] = scales.values[key]
    for layer in layers:
        node, port = layer.output.split(".")
        scale = scales.values.get(f"{graph}/{node}.{port}")
        if layer.kind in ("pdp", "slice") or scale is None and layer.kind == "concat":
            scale = value_scale[layer.inputs[0]]
        if scale is None:
            raise TargetError(f"nvdla: no INT8 scale for '{layer.output}'; calibrate again "
                              "(the calibration table is for another program)")
        value_scale[layer.output] = scale
        layer.attrs = {**layer.attrs, "q": _layer_q(layer, value_scale)}
        if layer.weight is not None:
            layer.weight = layer.attrs["q"].pop("qw")
    return layers, {"scales": value_scale}


def _layer_q(layer: Layer, value_scale: dict) -> dict:
    sx = value_scale[layer.inputs[0]]
    q: dict = {}
    if layer.kind in ("conv", "fc"):
        flat = layer.weight.reshape(layer.weight.shape[0], -1)
        amax = np.abs(flat).max(axis=1)
        sw = np.where(amax > 0, amax / QMAX, 1.0)
        shape = (-1,) + (1,) * (layer.weight.ndim - 1)
        q["qw"] = np.clip(round_away(layer.weight / sw.reshape(shape)), -QMAX, QMAX).astype(np.int8)
        sa = sx * sw
        q["qb"] = (round_away(layer.bias / sa) if layer.bias is not None
                   else np.zeros(len(sw), np.int64)).astype(np.int64)
    elif layer.kind == "concat":
        q["requant"] = [fixed_point(value_scale[v] / value_scale[layer.output])
                        for v in layer.inputs]
        return q
    elif layer.kind == "cdp":
        q["scales"] = (sx, value_scale[layer.output])
        return q
    elif layer.kind == "slice":
        return q
    else:
        channels = layer.shape[1] if len(layer.shape) > 1 else 1
        sa = np.full(channels, sx / 2 ** SDP_WIDEN)
    steps = []
    for index, (name, operand) in enumerate(layer.steps):
        if name == "add_channel":
            steps.append({"add": round_away(operand / sa).astype(np.int64)})
        elif name == "mul_channel":
            m, n = zip(*(fixed_point(float(v)) for v in operand))
            steps.append({"mul": np.array(m, np.int64), "shift": np.array(n, np.int64)})
        elif name == "add_tensor":
            m, n = zip(*(fixed_point(value_scale[operand] / a) for a in sa))
            steps.append({"add_tensor": operand, "mul": np.array(m, np.int64),
                          "shift": np.array(n, np.int64)})
        elif name == "mul_tensor":
            steps.append({"mul_tensor": operand})
            sa = sa * value_scale[operand]
        elif name == "relu":
            steps.append({"relu": True})
        elif name == "clip":
            steps.append({"low": round_away(operand[0] / sa).astype(np.int64),
                          "high": round_away(operand[1] / sa).astype(np.int64)})
        elif name == "prelu":
            m, n = zip(*(fixed_point(float(v)) for v in operand))
            steps.append({"negative_mul": np.array(m, np.int64), "shift": np.array(n, np.int64)})
        else:
            # The table's output: the layer's scale when it ends the layer,
            # else the function's own range [-1, 1].
            last = index == len(layer.steps) - 1
            out_scale = value_scale[layer.output] if last else 1.0 / QMAX
            m, n = zip(*(fixed_point(a / (LUT_RANGE / QMAX)) for a in sa))
            codes = np.arange(-128, 128) * (LUT_RANGE / QMAX)
            table = np.clip(round_away(lookup(name, codes) / out_scale), -128, 127).astype(np.int8)
            steps.append({"lut": table, "mul": np.array(m, np.int64), "shift": np.array(n, np.int64)})
            sa = np.full(len(sa), out_scale)
    q["steps"] = steps
    m, n = zip(*(fixed_point(a / value_scale[layer.output]) for a in sa))
    q["out_mul"], q["out_shift"] = np.array(m, np.int64), np.array(n, np.int64)
    return q


# the integer engines ----------------------------------------------------------
def quantize_input(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(round_away(np.asarray(x, np.float64) / scale), -QMAX, QMAX).astype(np.int8)


def run_int8(layers: list[Layer], inputs: dict[str, np.ndarray], header: dict,
             engine: str = "numpy") -> dict:
    """Every layer's output, dequantised to float32 (as the output DMA's
    converter would), from float inputs quantised at their scales;
    ``engine`` computes the convolutions (numpy, or torch on a CUDA GPU)."""
    scales = header["scales"]
    q = {name: quantize_input(a, scales[name]) for name, a in inputs.items()}
    for layer in layers:
        q[layer.output] = _layer_int8(layer, q, engine).reshape((-1,) + tuple(layer.shape[1:]))
    return {name: (values.astype(np.float32) * np.float32(scales[name]))
            for name, values in q.items()}


def _layer_int8(layer: Layer, q: dict, engine: str) -> np.ndarray:
    params = layer.attrs["q"]
    x = q[layer.inputs[0]]
    if layer.kind == "slice":
        return channel_slice(layer, x)
    if layer.kind == "cdp":
        sx, sy = params["scales"]
        real = x.astype(np.float64) * sx
        squares = (x.astype(np.int64) ** 2).astype(np.float64) * sx * sx
        return np.clip(round_away(lrn(layer, real, squares) / sy), -128, 127).astype(np.int8)
    if layer.kind == "pdp":
        result = pool(layer, x.astype(np.int64))
        if isinstance(result, tuple):
            total, count = result
            result = np.floor_divide(2 * total + count, 2 * count)
        return result.astype(np.int8)
    if layer.kind == "concat":
        parts = [np.clip(rshift(q[v].astype(np.int64) * m, n), -128, 127)
                 for v, (m, n) in zip(layer.inputs, params["requant"])]
        return np.concatenate(parts, axis=layer.attrs["axis"]).astype(np.int8)
    if layer.kind in ("conv", "fc"):
        acc = core(layer, x.astype(np.int64), layer.weight.astype(np.int64), engine)
        if np.abs(acc).max(initial=0) >= 2 ** 31:
            raise ValueError(f"layer '{layer.name}' overflows the 32-bit accumulators")
        acc = acc + _channels(params["qb"], acc)
    else:
        acc = np.left_shift(x.astype(np.int64), SDP_WIDEN)
    for step in params["steps"]:
        acc = _step(step, acc, q)
    out = rshift(acc * _channels(params["out_mul"], acc), _channels(params["out_shift"], acc))
    return np.clip(out, -128, 127).astype(np.int8)


def _step(step: dict, acc: np.ndarray, q: dict) -> np.ndarray:
    if "add" in step and "mul" not in step:
        return acc + _channels(step["add"], acc)
    if "add_tensor" in step:
        other = q[step["add_tensor"]].astype(np.int64).reshape(acc.shape)
        return acc + rshift(other * _channels(step["mul"], acc), _channels(step["shift"], acc))
    if "mul_tensor" in step:
        return acc * q[step["mul_tensor"]].astype(np.int64).reshape(acc.shape)
    if "relu" in step:
        return np.maximum(acc, 0)
    if "negative_mul" in step:
        scaled = rshift(acc * _channels(step["negative_mul"], acc), _channels(step["shift"], acc))
        return np.where(acc < 0, scaled, acc)
    if "low" in step:
        return np.clip(acc, _channels(step["low"], acc), _channels(step["high"], acc))
    if "lut" in step:
        code = np.clip(rshift(acc * _channels(step["mul"], acc), _channels(step["shift"], acc)),
                       -128, 127)
        return step["lut"].astype(np.int64)[code + 128]
    return rshift(acc * _channels(step["mul"], acc), _channels(step["shift"], acc))


def _channels(values, like: np.ndarray) -> np.ndarray:
    """Per-channel parameters shaped to broadcast along axis 1."""
    return np.asarray(values).reshape((1, -1) + (1,) * (like.ndim - 2))
