"""The conformance kit run the way vendors and CI run it: pytest in a new
process.  The kit itself runs against every bundled target usable here."""
import subprocess
import sys
from pathlib import Path

import pytest

import hpvm_sdk.conformance
from hpvm.registry import get_registry

REPO = Path(__file__).resolve().parents[2]
BUNDLED = ("interp", "cpu", "gpu_opencl", "fpga_aoc", "nvdla", "movidius", "aten", "fixedfunc")
BUNDLED_USABLE = [info.name for info in get_registry().targets()
                  if info.name in BUNDLED and info.availability.available]
PASSED = "verdict: every check that applies to this target passed"
KIT_ARGS = {"nvdla": ("--hpvm-tolerance", "100")}
"""Targets computing in FP16 run the battery with wider float tolerances."""


def pytest_in_repo(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.mark.parametrize("target", BUNDLED_USABLE)
def test_bundled_target_passes_the_kit(target):
    result = hpvm_sdk.conformance.run(target, "-q", *KIT_ARGS.get(target, ()), cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert PASSED in result.stdout
    assert "category" in result.stdout and "memory tracker" in result.stdout


def test_unavailable_target_skips_every_check_with_the_reason():
    unavailable = [info for info in get_registry().targets() if not info.availability.available]
    if not unavailable:
        pytest.skip("every installed target is usable here")
    info = unavailable[0]
    result = hpvm_sdk.conformance.run(info.name, "-q", cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" not in result.stdout.splitlines()[-1]
    assert f"not tested, the target is not available here: {info.availability.reason}" in result.stdout


def test_unknown_target_is_a_usage_error_naming_the_installed_ones():
    result = hpvm_sdk.conformance.run("no_such_target", cwd=REPO)
    assert result.returncode == 4
    assert "--hpvm-target: unknown target 'no_such_target'" in result.stderr
    assert "interp" in result.stderr


def test_without_the_option_the_battery_is_never_collected():
    result = pytest_in_repo("--collect-only", "-q", "sdk/hpvm_sdk/conformance")
    assert "check_" not in result.stdout


def test_with_paths_the_battery_runs_in_addition_to_them():
    result = pytest_in_repo("--collect-only", "-q", "--hpvm-target", "interp",
                            "sdk/tests/test_sdk.py")
    assert "sdk/tests/test_sdk.py" in result.stdout
    assert "battery/check_corpus.py" in result.stdout


def test_without_paths_only_the_battery_runs():
    result = pytest_in_repo("--collect-only", "-q", "--hpvm-target", "interp")
    collected = [line for line in result.stdout.splitlines() if line.strip()]
    assert collected and all("/conformance/battery/check_" in line for line in collected)
