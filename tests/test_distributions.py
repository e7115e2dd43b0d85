"""Every distribution of the repository (hpvm, the SDK, each target plugin)
builds an sdist and, from that sdist, a wheel with ``python -m build``;
hpvm and the cpu plugin, installed from those wheels into a fresh venv (no
editable install, no repository on the path), list their targets and run
the demo, compile and run a program.

The venv takes hpvm's dependencies from the package index; where none is
reachable (the lent GPU machines) the install test is skipped, saying so.
"""
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [ROOT, ROOT / "sdk",
            *sorted(p.parent for p in (ROOT / "plugins").glob("*/pyproject.toml"))]
LIBRARIES = {ROOT / "sdk", ROOT / "plugins" / "opencl"}
"""Distributions that register no target (their wheels have no entry points)."""
SKIPPED = shutil.ignore_patterns(".venv", "build", "dist", "*.egg-info", "__pycache__",
                                 ".pytest_cache", ".hypothesis", "tests", "benchmarks",
                                 "plugins", "sdk", "examples", "docs", "tools", ".git", ".whl")

pytest.importorskip("build")


def distribution_name(project: Path) -> str:
    return tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> Path:
    """Every project copied out of the repository (so no build/ or
    egg-info lands in it) and built: sdist, then the wheel from the sdist."""
    out = tmp_path_factory.mktemp("dist")
    sources = tmp_path_factory.mktemp("sources")
    for project in PROJECTS:
        copy = sources / project.relative_to(ROOT.parent)
        shutil.copytree(project, copy, ignore=SKIPPED)
        built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                                str(out), str(copy)], capture_output=True, text=True)
        assert built.returncode == 0, \
            f"{project.name}: {built.stdout[-2000:]}{built.stderr[-2000:]}"
    return out


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: distribution_name(p))
def test_every_distribution_builds_an_sdist_and_a_wheel(dists, project):
    stem = distribution_name(project).replace("-", "_")
    wheels = list(dists.glob(f"{stem}-*.whl"))
    sdists = list(dists.glob(f"{stem}-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dists.iterdir())
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert any(n.endswith("entry_points.txt") for n in names) or project in LIBRARIES
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)
    with tarfile.open(sdists[0]) as archive:
        assert any(n.endswith("/pyproject.toml") for n in archive.getnames())


def test_hpvm_wheel_carries_every_package_and_its_data(dists):
    names = zipfile.ZipFile(next(dists.glob("hpvm-*.whl"))).namelist()
    packages = {str(Path(n).parent).replace("/", ".") for n in names if n.endswith("__init__.py")}
    found = {".".join(("hpvm",) + init.parent.relative_to(ROOT / "core").parts)
             for init in (ROOT / "core").rglob("__init__.py")}
    assert found <= packages
    assert any(n.startswith("hpvm/demo/data/") and n.endswith(".pgm") for n in names)


def index_reachable(python: Path, scratch: Path) -> bool:
    probe = subprocess.run([str(python), "-m", "pip", "download", "-q", "--no-deps", "--dest",
                            str(scratch), "pluggy"], capture_output=True, text=True, timeout=300)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def fresh_venv(dists, tmp_path_factory) -> Path:
    """A new venv with hpvm and hpvm-cpu installed from the built wheels."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    if not index_reachable(python, tmp_path_factory.mktemp("probe")):
        pytest.skip("no package index reachable for hpvm's dependencies")
    wheels = [next(dists.glob(f"{stem}-*.whl")) for stem in ("hpvm", "hpvm_cpu")]
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q",
                                *map(str, wheels)], capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv


def run_in(venv: Path, cwd: Path, *command: str) -> subprocess.CompletedProcess:
    """``command`` with the venv's bin first on PATH, outside the repository."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_hpvm_and_a_plugin_installed_from_wheels_compile_and_run(fresh_venv, tmp_path):
    where = run_in(fresh_venv, tmp_path, "python", "-c",
                   "import hpvm, hpvm_cpu; print(hpvm.__file__); print(hpvm_cpu.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(fresh_venv) for line in where.stdout.split())

    targets = run_in(fresh_venv, tmp_path, "hpvm", "targets")
    assert targets.returncode == 0, targets.stderr
    cpu_row = next(line for line in targets.stdout.splitlines() if line.split()[:1] == ["cpu"])
    assert cpu_row.split()[3] == "yes", targets.stdout

    demo = run_in(fresh_venv, tmp_path, "hpvm", "demo", "--save", "blur")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert (tmp_path / "edges.png").is_file()

    compiled = run_in(fresh_venv, tmp_path, "hpvm", "compile", "blur/blur.hpvm", "--targets",
                      "cpu", "-o", "blur.hpvmx")
    assert compiled.returncode == 0, compiled.stderr
    for program, out in (("blur.hpvmx", "cpu.npz"), ("blur/blur.hpvm", "interp.npz")):
        ran = run_in(fresh_venv, tmp_path, "hpvm", "run", program, "--inputs",
                     "blur/blur_inputs.npz", "--outputs", out)
        assert ran.returncode == 0, ran.stderr
    cpu, interp = np.load(tmp_path / "cpu.npz"), np.load(tmp_path / "interp.npz")
    assert set(cpu.files) == set(interp.files)
    for name in cpu.files:
        np.testing.assert_allclose(cpu[name], interp[name], rtol=1e-5, atol=1e-6)
