"""Checks the register-tile tests share: a module run by a target's
default schedule agrees with the golden model."""
import numpy as np

import hpvm
from hpvm.passes.register_tile import SCHEDULE_ATTRIBUTE


def outputs(module, inputs, target="interp", options=None):
    return hpvm.compile(module, targets=[target], options=options or {})(**inputs)


def check_scheduled_by_default(module, target, cases):
    """For each (label, inputs) of ``cases``: ``module`` compiled for
    ``target`` with its defaults is register-tiled and agrees with the
    interpreter."""
    for label, inputs in cases:
        expected = outputs(module, inputs)
        exe = hpvm.compile(module, targets=[target])
        assert SCHEDULE_ATTRIBUTE in exe.artifacts[target].files["module.hpvm"].decode()
        got = exe(**inputs)
        for port, value in expected.items():
            np.testing.assert_allclose(got[port], value, rtol=2e-5, atol=1e-4,
                                       err_msg=f"{port} at {label}")
