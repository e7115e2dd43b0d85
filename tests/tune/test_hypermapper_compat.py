"""hypermapper_compat's two fixes are still needed by the HyperMapper
release we use (these tests fail once upstream fixes its code: then drop
the fix), and HyperMapper runs with them."""
import importlib.util
import inspect

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("hypermapper") is None,
                                reason="hypermapper is not installed (pip install 'hpvm[tune]')")


def test_hypermapper_still_passes_the_removed_sparse_argument():
    source = importlib.util.find_spec("hypermapper.models").origin
    text = open(source).read()
    assert "OneHotEncoder(categories=\"auto\", sparse=False)" in text
    from sklearn.preprocessing import OneHotEncoder
    assert "sparse" not in inspect.signature(OneHotEncoder).parameters


def test_hypermapper_still_imports_pkg_resources():
    text = open(importlib.util.find_spec("hypermapper.optimizer").origin).read()
    assert "from pkg_resources import resource_stream" in text


def test_the_fixed_encoder_takes_both_names():
    from hpvm.tune.hypermapper_compat import load_hypermapper
    load_hypermapper()
    from hypermapper import models
    import numpy as np
    encoded = models.OneHotEncoder(categories="auto", sparse=False).fit_transform(
        np.array([[0], [2], [1]]))
    assert encoded.shape == (3, 3) and not hasattr(encoded, "toarray")
    assert models.OneHotEncoder(sparse_output=False).get_params()["sparse_output"] is False


def test_the_pkg_resources_stand_in_does_not_outlive_the_import():
    import sys
    from hpvm.tune.hypermapper_compat import load_hypermapper
    load_hypermapper()
    stand_in = sys.modules.get("pkg_resources")
    assert stand_in is None or "hpvm" not in (stand_in.__doc__ or "")
