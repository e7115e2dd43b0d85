"""hpvm-gpu-opencl: the hpvm target 'gpu_opencl'.

GPUs and other OpenCL devices through OpenCL C (PoCL on the CPU, NVIDIA
GPUs through their ICD).  Read target.py first: it names the pieces
(renderer.py: IR to OpenCL C; program.py: builds and their cache;
devices.py: device choice; device.py, launch.py, transfers.py: the runtime
shim; layout.py: kernel arguments; testing.py: single kernels in tests).
"""
