"""pad: every mode's reference is numpy's np.pad, its lowering computes the
same, and bad attributes are refused by name."""
import numpy as np
import pytest

from hpvm.errors import VerificationError
from hpvm.interp.testing import assert_lowering_matches
from hpvm.ir.tensor_ops import get_op, tensor_node
from hpvm.ir.tensor_ops.testing import types_of

X = np.random.default_rng(0).standard_normal((2, 3, 5, 4)).astype(np.float32)
CASES = {
    "constant": ({"pads": (0, 1, 2, 0, 1, 0, 1, 3), "value": -2.0},
                 dict(mode="constant", constant_values=-2.0)),
    "edge": ({"pads": (0, 0, 2, 1, 1, 0, 0, 3), "mode": "edge"}, dict(mode="edge")),
    "reflect": ({"pads": (0, 2, 1, 3, 1, 1, 4, 2), "mode": "reflect"}, dict(mode="reflect")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pad_is_numpys_pad_and_its_lowering_agrees(case):
    attrs, numpy_form = CASES[case]
    pads = attrs["pads"]
    widths = list(zip(pads[:4], pads[4:]))
    np.testing.assert_array_equal(get_op("pad").evaluate({"x": X}, attrs)["y"],
                                  np.pad(X, widths, **numpy_form))
    assert_lowering_matches(tensor_node("p", "pad", types_of(x=X), attrs), {"x": X})


@pytest.mark.parametrize("attrs, message", [
    ({"pads": (1, 1)}, r"attribute 'pads' must be 8 integers"),
    ({"pads": (0, 0, 0, -1, 0, 0, 0, 0)}, r"attribute 'pads' must be a list of integers >= 0"),
    ({"pads": (0, 0, 0, 1, 0, 0, 0, 0), "mode": "wrap"}, r"attribute 'mode' must be one of"),
    ({"pads": (0, 0, 5, 0, 0, 0, 0, 0), "mode": "reflect"}, r"reflect padding of 5 on axis 2"),
])
def test_bad_pads_are_refused_by_name(attrs, message):
    with pytest.raises(VerificationError, match=message):
        tensor_node("p", "pad", types_of(x=X), attrs)
