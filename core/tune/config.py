"""A tuned configuration: the values a tuning run chose, for one program on
one list of targets, as JSON that ``hpvm.compile(..., config=...)`` and
``hpvm compile --config`` apply and that a saved executable carries.

    {"format": "hpvm-tune-config/1",
     "module": "<sha256 of the program's canonical text>",
     "targets": ["gpu_opencl", "cpu"],
     "values": {"fuse sobel_x:magnitude": true, "gpu_opencl.work_group @main.blur": [16, 16]},
     "objectives": {"seconds": 0.0021}}

``"reassociate": true`` marks a configuration tuned with float sums
folded in another order (``hpvm tune --reassociate``): applying it
admits those values.  Parameters a configuration leaves out keep their
defaults (the program as written).  Applying one rebuilds the program's space (space.py), so an
unknown parameter, a value the parameter does not admit, or a
configuration made for another program is an error that says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import write_text_atomically
from ..ir.graph import Module
from .space import PASS_PARAMETERS, Realisation, TuneError, module_digest, space

CONFIG_FORMAT = "hpvm-tune-config/1"


@dataclass
class TuningConfig:
    """The chosen ``values`` for the program whose digest is ``module``,
    tuned on ``targets``; ``objectives`` as measured when it was chosen;
    ``reassociate``: whether its space let float sums be reordered."""

    module: str
    targets: list[str]
    values: dict[str, Any]
    objectives: dict[str, float] = field(default_factory=dict)
    reassociate: bool = False

    def to_json(self) -> dict:
        return {"format": CONFIG_FORMAT, "module": self.module, "targets": list(self.targets),
                "values": self.values, "objectives": self.objectives,
                **({"reassociate": True} if self.reassociate else {})}

    @classmethod
    def from_json(cls, data: Any, source: str = "configuration") -> "TuningConfig":
        if not isinstance(data, dict) or data.get("format") != CONFIG_FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise TuneError(f"{source}: not a tuning configuration (format {found!r}, expected "
                            f"'{CONFIG_FORMAT}'; fix: give a file written by hpvm tune --config-out)")
        kinds = {"module": str, "targets": list, "values": dict, "objectives": dict,
                 "reassociate": bool}
        optional = {"objectives": {}, "reassociate": False}
        for key, kind in kinds.items():
            if not isinstance(data.get(key, optional.get(key)), kind):
                raise TuneError(f"{source}: '{key}' must be a {kind.__name__} "
                                f"(fix: regenerate it with hpvm tune)")
        return cls(data["module"], [str(t) for t in data["targets"]], dict(data["values"]),
                   dict(data.get("objectives", {})), data.get("reassociate", False))

    def save(self, path: str | Path) -> None:
        write_text_atomically(path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "TuningConfig":
        try:
            data = json.loads(Path(path).read_text())
        except OSError as error:
            raise TuneError(f"{path}: cannot read the configuration ({error.strerror})") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise TuneError(f"{path}: not JSON ({error}); fix: give a file written by "
                            "hpvm tune --config-out") from None
        return cls.from_json(data, str(path))


def as_config(config) -> TuningConfig:
    """A TuningConfig from itself, its JSON dict, or a path to its file."""
    if isinstance(config, TuningConfig):
        return config
    if isinstance(config, dict):
        return TuningConfig.from_json(config)
    if isinstance(config, (str, Path)):
        return TuningConfig.load(config)
    raise TuneError(f"a configuration is a TuningConfig, its JSON dict or a file path, "
                    f"not {type(config).__name__}")


def realise_config(module: Module, config, targets=None, registry=None
                   ) -> tuple[TuningConfig, list[str], Realisation]:
    """Check ``config`` against ``module`` (its digest, the ``targets``
    when given, every parameter and value) and realise it: the config, the
    targets it was tuned for and the Realisation."""
    config = as_config(config)
    digest = module_digest(module)
    if config.module != digest:
        raise TuneError(f"the configuration was made for another program (module sha256 "
                        f"{config.module[:12]}..., this one is {digest[:12]}...; fix: tune this "
                        "program, or compile the program the configuration was made for)")
    if targets is not None and list(targets) != list(config.targets):
        raise TuneError(f"the configuration was tuned for targets {','.join(config.targets)}, "
                        f"not {','.join(targets)} (fix: compile for the same targets, or tune "
                        "again for these)")
    design = space(module, config.targets, passes=PASS_PARAMETERS, registry=registry,
                   reassociate=config.reassociate)
    return config, list(config.targets), design.realise(config.values)


def merge_options(tuned: dict, given: dict) -> dict:
    """Compile options: the tuned ones, overridden by those the user gave
    (per target section, option by option)."""
    merged = {key: (dict(value) if isinstance(value, dict) else value) for key, value in tuned.items()}
    for key, value in given.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key].update(value)
        else:
            merged[key] = value
    return merged
