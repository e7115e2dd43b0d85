"""The 'movidius' target: tensor graphs through OpenVINO, on Intel's NPU
(the Movidius line) when present, else on OpenVINO's CPU plugin.

Matcher: OpenVINO's own ``query_model`` (matcher.py).  Partitions: the
claimed nodes of a graph in as few convex groups as possible, each one
OpenVINO model and one launch.  Code generator: each partition built with
``openvino.opset13`` (translate.py) and saved as OpenVINO IR (.xml +
.bin) in the artifact.  Runtime shim: the IR read back and compiled for
the device on load, OpenVINO's model cache under the hpvm cache
(device.py).

Options: ``device`` (``NPU``, ``MYRIAD`` where an older OpenVINO has it,
``GPU``, ``CPU``, ``AUTO``; default: NPU if present, else CPU),
``precision`` (``fp32``, the default, exact as the interpreter; ``fp16``
or ``bf16``: OpenVINO's INFERENCE_PRECISION_HINT, which a device without
that arithmetic may not honour, and the placement report says so), ``performance_hint`` (``latency`` or ``throughput``) and
``threads`` (INFERENCE_NUM_THREADS, CPU device).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from hpvm.errors import TargetError
from hpvm.ir.graph import Graph, Module, Node
from hpvm.options import Option
from hpvm.passes.outline import convex_partitions, members
from hpvm.target import Artifact, Availability, Device, NodeRef, Target, cache_directory

PREFERRED_DEVICES = ("NPU", "CPU")
"""The default device: the first of these OpenVINO finds."""
PRECISION_HINTS = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}

OPTIONS = [
    Option("device", str, None, "OpenVINO device: NPU, MYRIAD, GPU, CPU or AUTO; None: NPU "
           "when present, else CPU"),
    Option("precision", str, "fp32", "inference precision hint", choices=tuple(PRECISION_HINTS)),
    Option("performance_hint", str, "latency", "OpenVINO PERFORMANCE_HINT",
           choices=("latency", "throughput")),
    Option("threads", int, None, "CPU device threads (INFERENCE_NUM_THREADS); None: OpenVINO "
           "decides", minimum=1),
]


class MovidiusTarget(Target):
    name = "movidius"
    description = ("tensor graphs through OpenVINO: Intel NPU (the Movidius line) when present, "
                   "else OpenVINO's CPU plugin")

    @property
    def native_tensor_ops(self) -> frozenset[str]:
        try:
            from .translate import TRANSLATED_OPS
        except ImportError:  # OpenVINO missing: the target is unavailable anyway
            return frozenset()
        return TRANSLATED_OPS

    def __init__(self, device: str | None = None, device_error: str = ""):
        self._core = None
        self._decisions: dict = {}
        self._device = device
        self._device_error = device_error

    def configured(self, options: dict) -> "MovidiusTarget":
        """This target for the device ``options`` choose: the matcher asks
        that device (a missing one claims nothing and says so)."""
        try:
            device, error = self.device_name(options), ""
        except TargetError as missing:
            device, error = None, str(missing)
        other = MovidiusTarget(device, error)
        other._core = self._core
        return other

    # discovery ---------------------------------------------------------------
    def availability(self) -> Availability:
        try:
            import openvino as ov
        except ImportError as error:
            return Availability.no(f"OpenVINO cannot be imported ({error}); pip install openvino")
        devices = self.core().available_devices
        default = _default_device(devices)
        if default is None:
            return Availability.no(f"OpenVINO {ov.get_version()} finds no device")
        where = ("on the NPU" if default == "NPU" else
                 f"on OpenVINO's {default} plugin: no Movidius/NPU device here")
        return Availability.yes(f"OpenVINO {ov.get_version().split('-')[0]}, devices "
                                f"{', '.join(devices)}; by default {where}")

    def core(self):
        """One OpenVINO Core per target, its model cache under the hpvm cache."""
        if self._core is None:
            import openvino as ov
            core = ov.Core()
            core.set_property({"CACHE_DIR": str(cache_directory(self.name))})
            self._core = core
        return self._core

    def options(self) -> list[Option]:
        return OPTIONS

    # matcher -------------------------------------------------------------------
    def claims(self, module: Module, graph: Graph, node: Node) -> bool:
        return not self._device_error and node.name in self._decision(module, graph).claimed

    def declines(self, module: Module, graph: Graph, node: Node) -> str:
        if self._device_error:
            return self._device_error
        return self._decision(module, graph).reasons.get(node.name, "")

    def _decision(self, module: Module, graph: Graph):
        """The matcher's answer for ``graph``, kept while the same module
        is being placed."""
        from .matcher import decide
        key = (id(module), graph.name)
        cached = self._decisions.get(key)
        if cached is None or cached[0] is not module:
            if len(self._decisions) > 64:
                self._decisions.clear()
            device = self._device or self.device_name({})
            cached = self._decisions[key] = (module, decide(self.core(), device, module, graph))
        return cached[1]

    def device_name(self, options: dict) -> str:
        """The OpenVINO device ``options`` ask for, checked to be present."""
        devices = self.core().available_devices
        wanted = options.get("device") or _default_device(devices)
        if wanted is None:
            raise TargetError("movidius: OpenVINO finds no device")
        wanted = str(wanted).upper()
        family = wanted.split(".", 1)[0]
        if family not in ("AUTO", "MULTI", "HETERO") and not any(
                d == wanted or d.split(".", 1)[0] == family for d in devices):
            raise TargetError(f"movidius: OpenVINO device '{wanted}' is not present (found: "
                              f"{', '.join(devices)}); pass device='CPU' or leave it unset")
        return wanted

    def partitions(self, module: Module, nodes: list[NodeRef], options: dict):
        return convex_partitions(module, nodes)

    # code generator ----------------------------------------------------------
    def compile(self, module: Module, nodes: list[NodeRef], options: dict) -> Artifact:
        import openvino as ov
        from .translate import build_model
        device = self.device_name(options)
        files, partitions, notes = {}, {}, []
        with tempfile.TemporaryDirectory(prefix="hpvm-movidius-") as scratch:
            for ref in nodes:
                model = build_model(*_model_view(module, ref), model_name=str(ref))
                stem = str(ref)[1:]
                ov.save_model(model, Path(scratch) / f"{stem}.xml", compress_to_fp16=False)
                for suffix in (".xml", ".bin"):
                    files[stem + suffix] = (Path(scratch) / f"{stem}{suffix}").read_bytes()
                partitions[str(ref)] = stem
        asked = options.get("precision", "fp32")
        precision = _precision_in_use(self.core(), device, options)
        if precision != PRECISION_HINTS[asked]:
            notes.append(f"precision {asked} asked, but OpenVINO's {device} device computes in "
                         f"{precision} on this machine")
        notes.append(f"{len(nodes)} OpenVINO model(s) for device {device} (OpenVINO "
                     f"{ov.get_version().split('-')[0]})")
        return Artifact(self.name, files, {"partitions": partitions, "device": device,
                                           "notes": notes})

    # runtime shim ------------------------------------------------------------
    def load(self, artifact: Artifact, options: dict) -> Device:
        import numpy as np
        import openvino as ov
        from .device import OpenVinoDevice
        from .ov_errors import message
        core = self.core()
        label = ""
        try:
            device = self.device_name(
                {"device": options.get("device") or artifact.metadata.get("device")})
        except TargetError as missing:
            # The device of the compile is gone: OpenVINO's CPU plugin runs the same IR.
            device, label = "CPU", f"on OpenVINO CPU: {missing}"
        config = _config(device, options)
        models = {}
        for key, stem in artifact.metadata["partitions"].items():
            weights = artifact.files[stem + ".bin"]
            models[key] = core.read_model(artifact.files[stem + ".xml"],
                                          ov.Tensor(np.frombuffer(weights, np.uint8).copy()))

        def compile_model(model):
            try:
                return core.compile_model(model, device, config)
            except Exception as error:
                raise TargetError(f"movidius: OpenVINO cannot compile {model.get_name()} for "
                                  f"{device}: {message(error)}; compile with device='CPU' or without "
                                  "'movidius'") from None
        return OpenVinoDevice(models, compile_model, device, label)


def _model_view(module: Module, ref: NodeRef):
    """What build_model needs to make the model of partition (or node) ``ref``:
    Parameters for its inputs, Results for its outputs."""
    from .translate import ov_parameter
    view = members(module, ref.graph, ref.node)
    parameters = {p.name: ov_parameter(p.name, p.type) for p in view.inputs}
    for name, parameter in parameters.items():
        parameter.output(0).get_tensor().set_names({name})

    def source(node_name: str, port: str):
        return parameters[view.feeds[(node_name, port)]].output(0)

    def results(produced: dict):
        return [(name, produced[key]) for name, key in view.results]

    return module, view.graph, list(view.names), source, results, list(parameters.values())


def _config(device: str, options: dict) -> dict:
    config = {"PERFORMANCE_HINT": str(options.get("performance_hint", "latency")).upper(),
              "INFERENCE_PRECISION_HINT": PRECISION_HINTS[options.get("precision", "fp32")]}
    if options.get("threads") and device == "CPU":
        config["INFERENCE_NUM_THREADS"] = int(options["threads"])
    return config


def _precision_in_use(core, device: str, options: dict) -> str:
    """The precision ``device`` computes in with ``options`` (it may not have f16)."""
    try:
        import numpy as np
        import openvino as ov
        from openvino import opset13 as ops
        x = ops.parameter([1], np.float32)
        probe = core.compile_model(ov.Model([ops.relu(x)], [x]), device, _config(device, options))
        return probe.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    except Exception:  # a device without the property: take the hint as honoured
        return PRECISION_HINTS[options.get("precision", "fp32")]


def _default_device(devices) -> str | None:
    for preferred in PREFERRED_DEVICES:
        if any(d.split(".", 1)[0] == preferred for d in devices):
            return preferred
    return None
