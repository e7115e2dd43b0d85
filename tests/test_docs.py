"""The documentation site builds with ``mkdocs build --strict`` (no broken
link, every API reference found), its command-line reference covers every
``hpvm`` command, and every Python example of the tutorials runs."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorial").glob("*.md"))
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    for page in ("tutorial/first-model", "reference/cli", "reference/plugins", "reference/api"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def test_the_command_line_reference_covers_every_command():
    pytest.importorskip("mkdocs")
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from hooks import cli_reference
    finally:
        sys.path.remove(str(ROOT / "docs"))
    text = cli_reference()
    for command in ("targets", "ir", "passes", "opt", "compile", "plan", "viz", "run", "tune",
                    "approx", "demo", "sdk", "sdk new-target"):
        assert f"## `hpvm {command}`" in text, command


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_every_tutorial_example_runs(page, tmp_path):
    """A page's Python blocks, saved in order as one script (programs must
    live in a file) and run in an empty folder, as a reader would."""
    if page.stem == "first-model":
        for package in ("torch", "keras"):
            if importlib.util.find_spec(package) is None:
                pytest.skip(f"the model tutorial needs {package}")
    script = tmp_path / f"{page.stem.replace('-', '_')}.py"
    script.write_text("\n\n".join(PYTHON_BLOCK.findall(page.read_text())))
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-4000:]
