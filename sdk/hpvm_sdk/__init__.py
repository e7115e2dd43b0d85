"""hpvm-sdk: tools for writing an hpvm target (placeholder until the
conformance kit and template land).  The contract itself is
:mod:`hpvm.hookspec` and :mod:`hpvm.target`."""
__version__ = "0.1.0"
