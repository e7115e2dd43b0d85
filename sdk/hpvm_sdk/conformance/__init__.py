"""The hpvm conformance kit: the standard battery any target runs against
itself.

With hpvm-sdk installed, pytest knows the option (plugin entry point
``pytest11``)::

    pytest --hpvm-target mydevice            # the battery only
    pytest tests/ --hpvm-target mydevice     # your tests and the battery
    hpvm sdk conformance mydevice            # the same from the hpvm command

The battery (modules under ``battery/``) checks example programs, a
differential corpus, the tensor ops the target claims, error handling,
artifact save/load, the memory-tracker contract and concurrency, always
against the reference interpreter, and ends with a support summary.
:func:`run` starts it in a separate process (for a target's own tests).
"""
from __future__ import annotations

import subprocess
import sys


def command(target: str, *pytest_args: str) -> list[str]:
    """The command line that runs the battery against ``target``."""
    return [sys.executable, "-m", "pytest", "--hpvm-target", target, "-p", "no:cacheprovider",
            *pytest_args]


def run(target: str, *pytest_args: str, capture: bool = True, cwd=None,
        timeout: float | None = 1800) -> subprocess.CompletedProcess:
    """Run the battery against the installed ``target`` in a new Python
    process (this interpreter); returns the finished process (``returncode``
    0 when every check passed or was skipped; ``stdout`` holds the report
    when ``capture``)::

        result = hpvm_sdk.conformance.run("mydevice")
        assert result.returncode == 0, result.stdout
    """
    return subprocess.run(command(target, *pytest_args), capture_output=capture, text=True,
                          cwd=cwd, timeout=timeout)
