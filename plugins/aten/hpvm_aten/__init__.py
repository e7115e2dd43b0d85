"""hpvm-aten: the hpvm target 'aten' (tensor ops on ATen (PyTorch) kernels)."""
