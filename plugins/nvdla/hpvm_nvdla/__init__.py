"""hpvm-nvdla: the hpvm target 'nvdla'.

The NVIDIA Deep Learning Accelerator, emulated when no hardware is present.
"""
