"""hpvm-aten: the hpvm target 'aten'.

Tensor ops on ATen (PyTorch) kernels, on the CPU or a CUDA GPU, in FP32 or
FP16 (option ``precision="fp16"``).
"""
