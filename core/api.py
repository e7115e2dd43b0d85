"""The entry points ``hpvm.compile`` and ``hpvm.load``, joining the layers
below: compiling is the runtime's, a tuned configuration is the tuner's, and
the runtime knows nothing of tuning (docs/architecture.md)."""
from __future__ import annotations

from typing import Sequence

from .ir.verify import verify
from .registry import get_registry
from .runtime import Executable
from .runtime import compile as compile_placed
from .runtime.compiler import as_module
from .tune.config import merge_options, realise_config


def compile(program, targets: Sequence[str] | None = None, options: dict | None = None,
            registry=None, config=None) -> Executable:
    """Compile ``program`` (a front-end program, a Module or a ``.hpvm``
    path) for the ordered ``targets`` (see placement); a single target may
    be given as its name.  ``config`` (a TuningConfig, its JSON dict or
    file, from hpvm.tune) applies a tuned configuration: its passes,
    placement and options (``options`` given here override its options);
    ``targets`` then default to those it was tuned for."""
    if config is None:
        return compile_placed(program, targets, options, registry)
    registry = registry or get_registry()
    targets = [targets] if isinstance(targets, str) else targets
    module = as_module(program)
    verify(module)
    tuned, targets, realised = realise_config(module, config, targets, registry)
    pipeline = f"; pipeline {realised.pipeline}" if realised.pipeline else ""
    notes = [f"tuned configuration applied ({len(tuned.values)} parameters{pipeline})",
             *(f"tuning: {note}" for note in realised.notes)]
    exe = compile_placed(realised.module, targets, merge_options(realised.options, options or {}),
                         registry, notes)
    exe.config = tuned.to_json()
    return exe


def load(folder) -> Executable:
    """An Executable saved with ``exe.save(folder)`` (any process)."""
    return Executable.load(folder)
