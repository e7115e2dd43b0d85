"""hpvm-nvdla: the hpvm target 'nvdla' (the NVIDIA Deep Learning Accelerator, emulated when no hardware is present)."""
