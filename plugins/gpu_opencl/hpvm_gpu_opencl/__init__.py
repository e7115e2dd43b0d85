"""hpvm-gpu-opencl: the hpvm target 'gpu_opencl'.

GPUs and other OpenCL devices through OpenCL C (PoCL on the CPU, NVIDIA
GPUs through their ICD).  Read target.py first; the renderer, builds and
the runtime shim it uses are hpvm-opencl's (hpvm_opencl), which fpga_aoc
shares; testing.py runs single kernels in tests.
"""
