"""The standard battery: one module per category of checks.

The modules are named ``check_*.py`` rather than ``test_*.py`` so that a
plain ``pytest`` never collects them; the plugin hands them to pytest when
``--hpvm-target NAME`` is given.  Every check takes the session fixture
``hpvm_target`` (:class:`hpvm_sdk.conformance.harness.TargetUnderTest`).
"""
from __future__ import annotations

from pathlib import Path

CATEGORIES = {
    "check_examples": "example programs",
    "check_corpus": "differential corpus",
    "check_tensor_ops": "tensor ops",
    "check_errors": "error handling",
    "check_artifacts": "artifact save/load",
    "check_memory": "memory tracker",
    "check_concurrency": "concurrency",
}
"""Battery module -> the category the summary table shows, in order."""


def battery_files() -> list[str]:
    """Paths of the battery modules, in category order."""
    here = Path(__file__).resolve().parent
    return [str(here / f"{module}.py") for module in CATEGORIES]


def category_of(path) -> str | None:
    """The category of a test module's path; None for files outside the
    battery."""
    path = Path(path)
    if path.resolve().parent != Path(__file__).resolve().parent:
        return None
    return CATEGORIES.get(path.stem)
