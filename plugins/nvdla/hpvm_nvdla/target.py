"""The 'nvdla' target: tensor graphs on NVIDIA's Deep Learning Accelerator.

Matcher (matcher.py): the ops NVDLA's engines run, with their weights
constant.  Partitions: the claimed nodes of a graph in convex groups, each
one loadable and one launch; inside, ops fuse into hardware layers
(layers.py).  Code generator: the loadable (loadable.py) in FP16 or, with
calibration, INT8.  Runtime shim: with no NVDLA here, the bit-accurate
emulator (emulator.py, int8.py); run reports give the cycle model's time
(cost.py), labelled so.  A real NVDLA runtime (its user-mode driver
loading the loadable) would replace :class:`~.device.EmulatorDevice`.

Options: ``config`` (nv_full, nv_small), ``precision`` (fp16, int8),
``calibration`` (INT8: input batches, a dict of arrays or a list of such
dicts), ``calibration_method`` (max, percentile), ``percentile``,
``calibration_table`` (a JSON file of scales to read, or to write when
calibrating), ``emulator_engine`` (numpy; torch on a CUDA GPU; auto),
``clock_mhz`` and ``bandwidth_gbs`` (cost model).
"""
from __future__ import annotations

import shutil

from hpvm.errors import TargetError
from hpvm.ir.graph import Graph, Module, Node
from hpvm.options import Option
from hpvm.passes.outline import convex_partitions
from hpvm.target import Artifact, Availability, Device, NodeRef, Target

from .config import CONFIGS, Config
from .layers import ENGINE_OF

LOADABLE_SUFFIX = ".nvdla"
OPTIONS = [
    Option("config", str, "nv_full", "NVDLA configuration", choices=tuple(CONFIGS)),
    Option("precision", str, "fp16", "arithmetic of the engines", choices=("fp16", "int8")),
    Option("calibration", object, None, "INT8: calibration inputs (a dict of arrays by "
           "input name, a list of such dicts, or an .npz file of them)"),
    Option("calibration_method", str, "max", "INT8 scale of each tensor: its largest "
           "magnitude, or a percentile of them", choices=("max", "percentile")),
    Option("percentile", float, 99.99, "the percentile of calibration_method=percentile",
           minimum=50.0, maximum=100.0),
    Option("calibration_table", str, None, "a JSON file of INT8 scales: read when it "
           "exists, else written by calibration"),
    Option("emulator_engine", str, "auto", "what computes the emulator's convolutions: "
           "numpy, torch (a CUDA GPU), or auto (torch when it sees a GPU)",
           choices=("auto", "numpy", "torch")),
    Option("clock_mhz", float, None, "cost model: the engines' clock; None: the "
           "configuration's", minimum=1.0),
    Option("bandwidth_gbs", float, None, "cost model: memory bandwidth in GB/s; None: the "
           "configuration's", minimum=0.001),
]


class NvdlaTarget(Target):
    name = "nvdla"
    description = ("the NVIDIA Deep Learning Accelerator: fused conv/SDP/PDP layers in FP16 or "
                   "INT8, a loadable, and a bit-accurate emulator when no NVDLA is present")
    native_tensor_ops = frozenset(op for op in ENGINE_OF)

    def availability(self) -> Availability:
        driver = shutil.which("nvdla_runtime")
        if driver:
            return Availability.yes(f"NVDLA runtime at {driver}; loadables also run on the "
                                    "emulator")
        return Availability.yes("EMULATOR: no NVDLA device here; loadables run on the "
                                "bit-accurate emulator (numpy) and timings come from the cycle "
                                "model of nv_full / nv_small")

    def options(self) -> list[Option]:
        return OPTIONS

    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        from .matcher import refusal
        return refusal(module, graph, node) is None

    def declines(self, module: Module, graph: Graph, node: Node) -> str:
        from .matcher import refusal
        return refusal(module, graph, node) or ""

    def partitions(self, module: Module, nodes: list[NodeRef], options: dict):
        return convex_partitions(module, nodes)

    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        from .compiler import compile_loadable
        config = _config(options)
        files, notes, loadables = {}, [], {}
        scales = _calibrate(module, options) if options.get("precision") == "int8" else None
        for ref in nodes:
            data, layer_count = compile_loadable(module, ref, options.get("precision", "fp16"),
                                                 config, scales)
            stem = str(ref)[1:] + LOADABLE_SUFFIX
            files[stem] = data
            loadables[str(ref)] = stem
            notes.append(f"{ref}: {layer_count} hardware layer(s) in {stem}")
        if scales is not None:
            files["calibration.json"] = scales.to_json().encode()
        return Artifact(self.name, files, {"loadables": loadables, "config": config.name,
                                           "notes": notes})

    def load(self, artifact: Artifact, options: dict) -> Device:
        from .device import EmulatorDevice
        from .loadable import read
        config = CONFIGS[artifact.metadata["config"]].with_options(options)
        loadables = {key: read(artifact.files[stem])
                     for key, stem in artifact.metadata["loadables"].items()}
        return EmulatorDevice(loadables, config, _engine(options.get("emulator_engine", "auto")))

    def estimate(self, module: Module, nodes: list[NodeRef], options: dict,
                 sizes: dict | None = None) -> dict | None:
        from .compiler import estimate_nodes
        return estimate_nodes(module, nodes, options.get("precision", "fp16"), _config(options),
                              sizes)


def _config(options: dict) -> Config:
    config = CONFIGS[options.get("config", "nv_full")].with_options(options)
    if options.get("precision", "fp16") == "fp16" and not config.fp16:
        raise TargetError(f"nvdla: configuration {config.name} has no FP16 engines; use "
                          "precision='int8' with calibration, or config='nv_full'")
    return config


def _engine(choice: str) -> str:
    from .torch_engine import available
    if choice == "torch" and not available():
        raise TargetError("nvdla: emulator_engine='torch' needs PyTorch with a CUDA GPU; use "
                          "'numpy' or 'auto'")
    return "torch" if choice == "torch" or (choice == "auto" and available()) else "numpy"


def _calibrate(module: Module, options: dict):
    from .int8 import calibrate_or_read
    return calibrate_or_read(module, options)
