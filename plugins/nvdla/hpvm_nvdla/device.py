"""The nvdla runtime shim: loadables run on the emulator.

Buffers are numpy arrays (``host_memory``).  A launch packs each input
into its surface (NVDLA's channel-packed layout, as the driver's DMA would
find it), runs the loadable's layers in the engines' arithmetic, and
unpacks the outputs.  Its time in the run report is the cycle model's
(``elapsed``), labelled so; the wall time of emulating it says nothing
about the hardware.  A device object with the same interface over NVDLA's
user-mode driver would run the same loadables on hardware.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hpvm.errors import Diagnostic, ExecutionError, Location
from hpvm.target import HostMemoryDevice, NodeRef

from . import cost
from .config import Config
from .emulator import run_fp16
from .loadable import pack_feature, unpack_feature


@dataclass
class _Done:
    seconds: float


class EmulatorDevice(HostMemoryDevice):
    timing_label = "emulated; time from the cycle model"

    def __init__(self, loadables: dict[str, tuple[dict, list]], config: Config,
                 engine: str = "numpy"):
        self.name = f"nvdla:{config.name} (emulator on {engine})"
        self.config = config
        self.engine = engine
        self._loadables = loadables

    def launch(self, node: NodeRef, args: dict[str, Any]) -> _Done:
        header, layers = self._loadables[str(node)]
        try:
            inputs = {port["name"]: _through_surface(args[port["name"]], port["surface"])
                      for port in header["inputs"]}
            if header["precision"] == "int8":
                from .int8 import run_int8
                values = run_int8(layers, inputs, header, self.engine)
            else:
                values = run_fp16(layers, inputs, self.engine)
        except (ValueError, KeyError) as error:
            raise ExecutionError(Diagnostic(
                Location(graph=node.graph, node=node.node),
                f"nvdla: the loadable cannot run on these inputs ({error})",
                "check the input shapes against the program's")) from None
        for port in header["outputs"]:
            target = args[port["name"]]
            if port["value"] in header.get("constants", {}):
                target[...] = np.asarray(header["constants"][port["value"]], target.dtype)
                continue
            result = _through_surface(values[port["value"]], port["surface"])
            target[...] = result.astype(np.float32).reshape(target.shape)
        batch = next((np.shape(args[p["name"]])[0] for p in header["inputs"]), 1)
        shapes = {p["name"]: tuple(np.shape(args[p["name"]])[1:]) for p in header["inputs"]}
        return _Done(cost.estimate(layers, batch, shapes, header["precision"],
                                   self.config)["seconds"])

    def elapsed(self, event: _Done) -> float:
        return event.seconds


def _through_surface(array: np.ndarray, surface: dict) -> np.ndarray:
    """``array`` stored into its surface and read back: the channel-packed
    layout the engines' DMA sees (a no-op on the values)."""
    array = np.asarray(array)
    if array.ndim not in (2, 4):
        return array
    channels = surface["dims"][0]
    packed = pack_feature(array, surface["channels_per_atom"])
    return unpack_feature(packed, channels).reshape(array.shape)
