"""hpvm-aten: the hpvm target 'aten'.

Tensor ops on ATen (PyTorch) kernels.
"""
