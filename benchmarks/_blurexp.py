import sys, time, statistics, tempfile, numpy as np
sys.path.insert(0, ".")
import hpvm
from benchmarks.suite import get
b = get("blur"); prog = b.build()
inputs = b.make_inputs("large", np.random.default_rng(0))
d = tempfile.mkdtemp(); np.savez(d + "/in.npz", **inputs)
from hpvm.tune.evaluate import load_arrays
loaded = load_arrays(d + "/in.npz")
for k, v in loaded.items():
    if hasattr(v, "flags"): print(k, v.shape, v.dtype, "writeable", v.flags.writeable, "aligned", v.ctypes.data % 64)
for k, v in inputs.items():
    if hasattr(v, "flags"): print(k, v.shape, v.dtype, "writeable", v.flags.writeable, "aligned", v.ctypes.data % 64)
def t(exe, inp, n=15):
    exe(**inp); xs=[]
    for _ in range(n):
        a=time.perf_counter(); exe(**inp); xs.append(time.perf_counter()-a)
    return statistics.median(xs)*1e3
base = hpvm.compile(prog, ["gpu_opencl"])
serial = hpvm.compile(prog, ["gpu_opencl"], options={"task_parallelism": False})
wg = hpvm.compile(prog, ["gpu_opencl"], options={"work_group": {"blur_x": (16, 16), "blur_y": (4, 64)}})
for label, exe in [("base", base), ("serial", serial), ("wg", wg)]:
    print(label, "make_inputs %.2f ms" % t(exe, inputs), "loaded %.2f ms" % t(exe, loaded))
print(base.report())
