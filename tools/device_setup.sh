# On the lent device machine, from the repository root: `source tools/device_setup.sh`.
# Installs hpvm, the cpu, opencl, gpu_opencl and aten plugins (editable, into the
# machine's /opt/torch/.venv) and whatever tools/device_wheels.sh put in
# .whl/ (carried with `carry: [".whl"]`); makes NVIDIA's OpenCL ICD
# visible; uses a fresh compile cache. Safe to source again on a warm machine.
export PATH=/opt/torch/.venv/bin:$PATH
if ! python3 -c "import hpvm_gpu_opencl, hpvm_opencl" 2>/dev/null; then
    python3 -m pip install -q --no-deps --no-build-isolation -e . -e plugins/cpu \
        -e plugins/opencl -e plugins/gpu_opencl -e plugins/aten 2>&1 | tail -2
fi
for group in gpu_opencl tune; do
    marker="/tmp/.hpvm-device-$group"
    if compgen -G ".whl/$group/*.whl" > /dev/null && [ ! -e "$marker" ]; then
        python3 -m pip install -q --no-deps .whl/$group/*.whl 2>&1 | tail -2 && touch "$marker"
    fi
done
if [ -f .whl/halide/halide.tar.xz ] && ! python3 -c "import halide" 2>/dev/null; then
    tar -xJf .whl/halide/halide.tar.xz -C "$(python3 -c 'import site; print(site.getsitepackages()[0])')"
fi
mkdir -p /tmp/icd
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd
export HPVM_CACHE_DIR="${HPVM_CACHE_DIR:-$(mktemp -d)}"
