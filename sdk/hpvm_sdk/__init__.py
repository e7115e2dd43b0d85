"""hpvm-sdk: what a hardware vendor needs to add an hpvm target.

- :mod:`hpvm_sdk.template`: ``hpvm sdk new-target NAME`` writes a plugin
  distribution that works from the first minute;
- :mod:`hpvm_sdk.conformance`: the conformance kit, a pytest plugin
  (``pytest --hpvm-target NAME``) checking any installed target against the
  reference interpreter;
- :mod:`hpvm_sdk.cli`: the ``hpvm sdk`` commands.

The contract itself is :mod:`hpvm.hookspec` and :mod:`hpvm.target`; the
vendor guide is this distribution's README.
"""
__version__ = "0.1.0"
