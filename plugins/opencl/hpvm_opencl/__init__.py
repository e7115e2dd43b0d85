"""hpvm-opencl: what hpvm's OpenCL targets share, so that none of them
imports another (gpu_opencl runs its kernels with it; fpga_aoc renders its
single-work-item kernels with the same printer and emulates them on the
same runtime).  It registers no target.

- renderer.py: kernel IR to OpenCL C (a C-style printer, hpvm.codegen);
- layout.py: kernel arguments, private and local buffers;
- program.py: builds and their cache;
- devices.py: device choice, contexts and queues;
- device.py, launch.py, transfers.py: the runtime shim (hpvm.target.Device).
"""
