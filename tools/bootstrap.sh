#!/usr/bin/env bash
# Set up .venv with hpvm, every plugin and the sdk installed in editable mode.
# Versions pinned for this environment only: tools/constraints.txt.
# Safe to run again: it reinstalls only when a pyproject.toml changed
# (delete .venv/.hpvm-bootstrap to force a reinstall).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.hpvm-bootstrap"

if [ ! -x "$VENV/bin/python" ]; then
    echo "bootstrap: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

packages=(-e ".[test,bench,docs]")   # bench: the suite's peers (numba, Halide); docs: mkdocs
# Extras the test environment needs beyond a plugin's own requirements.
declare -A EXTRAS=([gpu_opencl]="[pocl]")   # OpenCL on the CPU
for plugin in plugins/*/; do
    name="$(basename "$plugin")"
    [ -f "$plugin/pyproject.toml" ] && packages+=(-e "${plugin%/}${EXTRAS[$name]:-}")
done
packages+=(-e sdk)

# The stamp records what was installed: the project files and the venv's Python.
wanted="$(cat pyproject.toml plugins/*/pyproject.toml sdk/pyproject.toml tools/constraints.txt \
          | cat - <("$VENV/bin/python" --version) | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ]; then
    echo "bootstrap: $VENV is up to date"
    exit 0
fi

echo "bootstrap: installing $(( ${#packages[@]} / 2 )) editable packages (hpvm, plugins, sdk)"
"$VENV/bin/python" -m pip install -qq --upgrade pip
"$VENV/bin/python" -m pip install -qq -c tools/constraints.txt "${packages[@]}"
echo "$wanted" > "$STAMP"
echo "bootstrap: done ($VENV/bin/hpvm, $VENV/bin/python -m pytest)"
