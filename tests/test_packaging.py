"""The hpvm distribution lists every package of core/: a package left out
installs fine and fails only on a user's machine, at the import."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_under_core_is_in_the_distribution():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(("hpvm",) + init.parent.relative_to(ROOT / "core").parts)
             for init in (ROOT / "core").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
