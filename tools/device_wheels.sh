#!/usr/bin/env bash
# Packages for the lent device machine, which reaches no package registry:
# downloaded here into .whl/ (ignored by git; name it in the device tool's
# `carry`), installed there by `source tools/device_setup.sh`.
#
#   bash tools/device_wheels.sh gpu_opencl tune     # pyopencl; HyperMapper's own deps
#   bash tools/device_wheels.sh halide              # the Halide peer (about 48 MB)
#
# The device's Python is 3.12 (/opt/torch/.venv: torch, numba, onnxruntime,
# scipy, scikit-learn, pandas, statsmodels, matplotlib are there already).
# The carry limit is 64 MiB in all: Halide's wheel (69 MB) goes as a
# tar.xz of its contents, which device_setup.sh unpacks into site-packages.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-.venv/bin/python}"

download() {   # download FOLDER PACKAGE...: cp312 manylinux wheels, no dependencies
    local folder="$1"
    shift
    mkdir -p "$folder"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 -d "$folder" "$@"
}

for group in "$@"; do
    case "$group" in
        gpu_opencl)
            download .whl/gpu_opencl pyopencl==2026.1.4 platformdirs pytools siphash24 \
                typing_extensions ;;
        tune)
            download .whl/tune hypermapper==2.2.13 GPy==1.15.0 paramz cma jsonschema \
                jsonschema-specifications referencing rpds-py attrs ply pyDOE decorator six ;;
        halide)
            work="$(mktemp -d)"
            download "$work" halide==21.0.0
            mkdir -p "$work/contents" .whl/halide
            "$PY" -m zipfile -e "$work"/halide-*.whl "$work/contents"
            tar -C "$work/contents" -cf - halide halide-21.0.0.dist-info \
                | xz -T0 -6 > .whl/halide/halide.tar.xz
            rm -rf "$work" ;;
        *)
            echo "device_wheels: unknown group '$group' (gpu_opencl, tune, halide)" >&2
            exit 2 ;;
    esac
done
du -sh .whl
