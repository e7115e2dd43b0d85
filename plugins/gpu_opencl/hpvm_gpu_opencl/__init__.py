"""hpvm-gpu-opencl: the hpvm target 'gpu_opencl'.

GPUs and other OpenCL devices through OpenCL C (PoCL, NVIDIA).
"""
