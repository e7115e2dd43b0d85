"""The hpvm NVDLA loadable: a versioned, documented file holding one
launch's hardware layers, their surfaces and their packed weights.

Layout (all integers little-endian)::

    bytes 0-7    magic b"HPVMNVDL"
    bytes 8-11   format version: major (u16), minor (u16)
    bytes 12-15  header length H (u32)
    bytes 16..   header: UTF-8 JSON, H bytes, then zero padding to a
                 multiple of 64
    then         the data section: every array the header refers to,
                 each 64-byte aligned, at {"offset", "size"} from the
                 section's start, with its "dtype" and "shape"

Header: ``precision`` (fp16 or int8), ``config`` (the NVDLA configuration,
config.py), ``batch`` ("dynamic": the first dimension of every surface is
the batch, given at run time, as NVDLA's batch mode), ``inputs`` and
``outputs`` (the launch's ports: value name and surface), ``layers`` in
execution order (kind, fused ops, the hpvm nodes they came from, input
and output values and surfaces, attributes, SDP steps, weight and bias
references, MACs per image) and ``scales`` (INT8: each value's scale).

A surface describes feature data in NVDLA's layout: channels packed by
atom (``atom_bytes`` bytes: 32 on nv_full, so 16 FP16 or 32 INT8 channels
per atom), then width, then height, then channel groups:
``line_stride = W * atom_bytes``, ``surface_stride = H * line_stride``,
``batch_stride = ceil(C / channels_per_atom) * surface_stride``.

Weights are packed for direct convolution: kernels in groups of atomic-K,
channels in blocks of atomic-C, ``[ceil(K/aK)][R][S][ceil(C/aC)][aK][aC]``,
zero padded; fully connected weights are 1x1 kernels.
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np

from .config import Config
from .layers import Layer

MAGIC = b"HPVMNVDL"
VERSION = (1, 0)
ALIGN = 64


class LoadableError(Exception):
    """A damaged or foreign file (the message says what is wrong)."""


# surfaces -----------------------------------------------------------------
def surface(shape: tuple, precision: str, config: Config) -> dict:
    """The surface descriptor of one image of a value of ``shape``
    (batch first; C, H, W default to 1)."""
    c, h, w = (tuple(shape[1:]) + (1, 1, 1))[:3]
    element = 1 if precision == "int8" else 2
    per_atom = config.atom_bytes // element
    line = w * config.atom_bytes
    return {"dims": [c, h, w], "precision": precision, "atom_bytes": config.atom_bytes,
            "channels_per_atom": per_atom, "line_stride": line, "surface_stride": h * line,
            "batch_stride": math.ceil(c / per_atom) * h * line}


def pack_feature(array: np.ndarray, per_atom: int) -> np.ndarray:
    """[N, C, H, W] -> [N, ceil(C/per_atom), H, W, per_atom], zero padded."""
    n, c, h, w = array.reshape(array.shape[0], array.shape[1], -1, 1).shape if array.ndim == 2 \
        else array.shape
    padded = np.zeros((n, math.ceil(c / per_atom) * per_atom, h, w), array.dtype)
    padded[:, :c] = array.reshape(n, c, h, w)
    return padded.reshape(n, -1, per_atom, h, w).transpose(0, 1, 3, 4, 2).copy()


def unpack_feature(packed: np.ndarray, channels: int) -> np.ndarray:
    """The inverse of :func:`pack_feature`: [N, C, H, W]."""
    n, groups, h, w, per_atom = packed.shape
    return packed.transpose(0, 1, 4, 2, 3).reshape(n, groups * per_atom, h, w)[:, :channels]


def pack_weights(weight: np.ndarray, config: Config) -> np.ndarray:
    """[K, C, R, S] -> [ceil(K/aK), R, S, ceil(C/aC), aK, aC], zero padded."""
    k, c, r, s = weight.shape
    ak, ac = config.atomic_k, config.atomic_c
    padded = np.zeros((math.ceil(k / ak) * ak, math.ceil(c / ac) * ac, r, s), weight.dtype)
    padded[:k, :c] = weight
    blocks = padded.reshape(-1, ak, padded.shape[1] // ac, ac, r, s)
    return blocks.transpose(0, 4, 5, 2, 1, 3).copy()


def unpack_weights(packed: np.ndarray, shape: tuple) -> np.ndarray:
    k, c, r, s = shape
    groups_k, _, _, groups_c, ak, ac = packed.shape
    full = packed.transpose(0, 4, 3, 5, 1, 2).reshape(groups_k * ak, groups_c * ac, r, s)
    return full[:k, :c].copy()


# the file -------------------------------------------------------------------
class _Blobs:
    def __init__(self):
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, array: np.ndarray) -> dict:
        data = np.ascontiguousarray(array)
        ref = {"offset": self.size, "size": data.nbytes, "dtype": data.dtype.str,
               "shape": list(data.shape)}
        raw = data.tobytes()
        pad = (-len(raw)) % ALIGN
        self.parts.append(raw + b"\0" * pad)
        self.size += len(raw) + pad
        return ref


def write(layers: list[Layer], header: dict, config: Config, weight_dtype) -> bytes:
    """The loadable of ``layers``; ``header`` has precision, inputs,
    outputs (and scales); weights are stored as ``weight_dtype``."""
    blobs = _Blobs()
    precision = header["precision"]
    records = []
    for index, layer in enumerate(layers):
        record = {"index": index, "name": layer.name, "kind": layer.kind, "ops": layer.ops,
                  "nodes": layer.nodes, "inputs": layer.inputs, "output": layer.output,
                  "shape": list(layer.shape[1:]), "attrs": _operand(layer.attrs, blobs),
                  "output_surface": surface(layer.shape, precision, config),
                  "steps": [[name, _operand(operand, blobs)] for name, operand in layer.steps]}
        if layer.weight is not None:
            weight = layer.weight if layer.weight.ndim == 4 else layer.weight[:, :, None, None]
            record["weight"] = {"shape": list(weight.shape), "packing": "direct-conv",
                                "data": blobs.add(pack_weights(weight.astype(weight_dtype),
                                                               config))}
        if layer.bias is not None:
            record["bias"] = blobs.add(layer.bias)
        records.append(record)
    body = {"format": "hpvm-nvdla-loadable", "version": list(VERSION), "config": config.name,
            "batch": "dynamic", **header, "layers": records}
    text = json.dumps(body, default=_json_default).encode()
    head = MAGIC + struct.pack("<HHI", *VERSION, len(text)) + text
    head += b"\0" * ((-len(head)) % ALIGN)
    return head + b"".join(blobs.parts)


def _operand(operand, blobs: _Blobs):
    """JSON for an attribute or step operand: arrays go to the data section
    as ``{"array": ref}``, recursively."""
    if isinstance(operand, np.ndarray):
        return {"array": blobs.add(operand)}
    if isinstance(operand, (tuple, list)):
        return [_operand(v, blobs) for v in operand]
    if isinstance(operand, dict):
        return {key: _operand(v, blobs) for key, v in operand.items()}
    return operand


def _restored(value, array):
    """The inverse of :func:`_operand`; lists come back as tuples."""
    if isinstance(value, dict):
        if set(value) == {"array"}:
            return array(value["array"])
        return {key: _restored(v, array) for key, v in value.items()}
    if isinstance(value, list):
        return tuple(_restored(v, array) for v in value)
    return value


def _json_default(value):
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} in a loadable header")


def read(data: bytes) -> tuple[dict, list[Layer]]:
    """(header, layers) of a loadable; LoadableError if it is not one this
    version reads."""
    if len(data) < 16 or data[:8] != MAGIC:
        raise LoadableError("not an hpvm NVDLA loadable (bad magic)")
    major, minor, length = struct.unpack("<HHI", data[8:16])
    if major != VERSION[0]:
        raise LoadableError(f"loadable format {major}.{minor}; this hpvm-nvdla reads "
                            f"{VERSION[0]}.x: recompile the program")
    try:
        header = json.loads(data[16:16 + length])
    except ValueError as error:
        raise LoadableError(f"damaged header ({error})") from None
    start = 16 + length + (-(16 + length)) % ALIGN
    section = memoryview(data)[start:]

    def array(ref: dict) -> np.ndarray:
        end = ref["offset"] + ref["size"]
        if end > len(section):
            raise LoadableError("truncated data section")
        return np.frombuffer(section[ref["offset"]:end], np.dtype(ref["dtype"])).reshape(
            ref["shape"]).copy()

    layers = []
    for record in header["layers"]:
        weight = None
        if "weight" in record:
            weight = unpack_weights(array(record["weight"]["data"]),
                                    tuple(record["weight"]["shape"]))
            if record["kind"] == "fc":
                weight = weight[:, :, 0, 0]
        steps = [(name, _restored(op, array)) for name, op in record["steps"]]
        attrs = _restored(record["attrs"], array)
        layers.append(Layer(record["name"], record["kind"], record["nodes"], record["inputs"],
                            record["output"], (-1,) + tuple(record["shape"]), attrs, weight,
                            array(record["bias"]) if "bias" in record else None, steps))
    return header, layers


def dump(data: bytes) -> str:
    """The loadable in words, layer by layer (``hpvm-nvdla dump``)."""
    header, layers = read(data)
    lines = [f"hpvm NVDLA loadable {'.'.join(map(str, header['version']))}: config "
             f"{header['config']}, {header['precision']}, batch {header['batch']}"]
    for port in header["inputs"]:
        lines.append(f"  input  {port['name']}: {_surface_text(port['surface'])}")
    for port in header["outputs"]:
        lines.append(f"  output {port['name']} <- {port['value']}: "
                     f"{_surface_text(port['surface'])}")
    for record in header["layers"]:
        weight = record.get("weight")
        extra = (f", weights {weight['shape']} packed {weight['data']['shape']} "
                 f"({weight['data']['size']} bytes)" if weight else "")
        lines.append(f"  layer {record['index']:>3} {record['kind']:<6} {record['ops']:<28} "
                     f"{', '.join(record['inputs'])} -> {record['output']} "
                     f"{_surface_text(record['output_surface'])}{extra}  "
                     f"[{', '.join(record['nodes'])}]")
    if header.get("scales"):
        lines.append("  int8 scales: " + ", ".join(f"{k}={v:.6g}" for k, v in
                                                   sorted(header["scales"].items())))
    return "\n".join(lines)


def _surface_text(s: dict) -> str:
    c, h, w = s["dims"]
    return (f"{c}x{h}x{w} {s['precision']} ({s['channels_per_atom']} ch/atom, line "
            f"{s['line_stride']}, surface {s['surface_stride']}, batch {s['batch_stride']})")
