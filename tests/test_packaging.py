"""Distributions install like their ecosystem's: every package of core/ is
in the hpvm distribution (one left out installs fine and fails only on a
user's machine, at the import); ranges, not pins, on heavy shared
dependencies; optional pieces as extras; the repository's own environment
pinned apart, in tools/constraints.txt."""
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [ROOT / "pyproject.toml", ROOT / "sdk" / "pyproject.toml",
            *sorted((ROOT / "plugins").glob("*/pyproject.toml"))]
HEAVY = ("torch", "onnxruntime", "openvino", "pyopencl", "numpy", "llvmlite", "pocl-binary-distribution")


def test_every_package_under_core_is_in_the_distribution():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(("hpvm",) + init.parent.relative_to(ROOT / "core").parts)
             for init in (ROOT / "core").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def project(path: Path) -> dict:
    return tomllib.loads(path.read_text())["project"]


def requirements(path: Path) -> list[str]:
    data = project(path)
    extras = [r for group in data.get("optional-dependencies", {}).values() for r in group]
    return data.get("dependencies", []) + extras


@pytest.mark.parametrize("path", PROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_heavy_shared_dependencies_are_ranges_not_pins(path):
    pinned = [r for r in requirements(path) if "==" in r and r.split("==")[0].strip() in HEAVY]
    assert not pinned, f"{path}: pin these in tools/constraints.txt instead: {pinned}"


def test_pocl_is_an_extra_of_gpu_opencl():
    data = project(ROOT / "plugins" / "gpu_opencl" / "pyproject.toml")
    assert not any(r.startswith("pocl") for r in data["dependencies"])
    assert any(r.startswith("pocl-binary-distribution") for r in data["optional-dependencies"]["pocl"])


def test_hpvm_all_names_only_plugins_of_this_repository():
    names = {project(path)["name"] for path in PROJECTS}
    wanted = project(ROOT / "pyproject.toml")["optional-dependencies"]["all"]
    assert {r.split("[")[0] for r in wanted} <= names


def test_the_test_environment_pins_what_it_tests():
    pins = [line.split("==")[0] for line in (ROOT / "tools" / "constraints.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert "torch" in pins
    assert "constraints.txt" in (ROOT / "tools" / "bootstrap.sh").read_text()
