"""The vendor workflow end to end, in a fresh virtual environment.

From copies of this checkout, install hpvm, hpvm-cpu and hpvm-sdk (without
their dependencies; those come from PyPI or pip's cache), generate a target
from the template, pip install it, and check that `hpvm targets` lists it,
that a program compiles with targets=["acme_npu", "cpu"] and computes what
the interpreter computes, that the plugin's own tests and the conformance kit
pass, and that no file under core/ changed.

Slow (about a minute).  Set HPVM_SKIP_VENV_TEST=1 to skip it; CI runs it.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("HPVM_SKIP_VENV_TEST") == "1",
                                reason="HPVM_SKIP_VENV_TEST=1")

REPO = Path(__file__).resolve().parents[2]
TARGET = "acme_npu"
DEPENDENCIES = ("numpy", "pluggy", "networkx", "llvmlite", "pytest", "setuptools")
"""Installed at the versions this process uses, so pip's cache serves them."""

COMPILE_AND_RUN = """
import numpy as np
import hpvm.runtime
from hpvm.interp import run_module
from hpvm.testing import assert_outputs_close
from hpvm_sdk.conformance.programs import by_name

program = by_name("blur")            # node 'rows' is hinted cpu
module = program.load()
exe = hpvm.runtime.compile(module, targets=["acme_npu", "cpu"])
print(exe.placement.format())
assert exe.placement.targets == {"@main.rows": "cpu", "@main.columns": "acme_npu"}
inputs = program.inputs(seed=1)
assert_outputs_close(exe(**inputs), run_module(module, inputs), rtol=1e-4, atol=1e-5)
print("same as the interpreter")
"""


def file_digests(folder: Path) -> dict[str, str]:
    """A hash of every source file under ``folder`` (caches left out)."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts}


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys()
                  if before.get(name) != after.get(name))


def run(*command, cwd=None, timeout=300) -> str:
    started = time.perf_counter()
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd,
                            timeout=timeout, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert result.returncode == 0, (f"{' '.join(map(str, command))} failed "
                                    f"({result.returncode}):\n{result.stdout}\n{result.stderr}")
    print(f"{time.perf_counter() - started:6.1f}s  {' '.join(map(str, command))[-90:]}")
    return result.stdout


def copy_sources(destination: Path) -> dict[str, Path]:
    """Copies of the three distributions, so that building them writes
    nothing into the checkout."""
    caches = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    hpvm = destination / "hpvm"
    shutil.copytree(REPO / "core", hpvm / "core", ignore=caches)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, hpvm / name)
    cpu, sdk = destination / "hpvm-cpu", destination / "hpvm-sdk"
    shutil.copytree(REPO / "plugins" / "cpu", cpu, ignore=caches)
    shutil.copytree(REPO / "sdk", sdk, ignore=caches)
    return {"hpvm": hpvm, "cpu": cpu, "sdk": sdk}


def test_generated_target_installs_and_conforms_without_touching_core(tmp_path):
    core_before = file_digests(REPO / "core")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)  # this pip serves it: faster
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    pip = (sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-compile")
    run(*pip, *(f"{name}=={version(name)}" for name in DEPENDENCIES))
    sources = copy_sources(tmp_path / "src")
    run(*pip, "--no-deps", "--no-build-isolation", *sources.values())

    plugin = tmp_path / "hpvm-acme-npu"
    run(bin_dir / "hpvm", "sdk", "new-target", TARGET, "-o", plugin,
        "--description", "ACME neural processing unit")
    run(*pip, "--no-deps", "--no-build-isolation", plugin)

    targets = run(bin_dir / "hpvm", "targets")
    assert any(line.split()[:2] == [TARGET, "hpvm-acme-npu"] and " yes " in line
               for line in targets.splitlines()), targets
    assert "same as the interpreter" in run(python, "-c", COMPILE_AND_RUN, cwd=tmp_path)
    run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_target.py", cwd=plugin)
    report = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hpvm-target", TARGET,
                 cwd=tmp_path)
    assert "every check that applies to this target passed" in report, report
    changed = changed_files(core_before, file_digests(REPO / "core"))
    assert not changed, f"files under core/ changed: {changed}"
