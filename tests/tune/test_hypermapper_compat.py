"""hypermapper_compat's two fixes are still needed by the HyperMapper
release we use (these tests fail once upstream fixes its code: then drop
the fix), and HyperMapper runs with them."""
import importlib.util
import inspect
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("hypermapper") is None,
                                reason="hypermapper is not installed (pip install 'hpvm[tune]')")


def hypermapper_source(module: str) -> str:
    """The text of hypermapper/<module>.py, read without importing the
    package (which fails without the fixes under test)."""
    package = Path(importlib.util.find_spec("hypermapper").origin).parent
    return (package / f"{module}.py").read_text()


def test_hypermapper_still_passes_the_removed_sparse_argument():
    text = hypermapper_source("models")
    assert "OneHotEncoder(categories=\"auto\", sparse=False)" in text
    from sklearn.preprocessing import OneHotEncoder
    assert "sparse" not in inspect.signature(OneHotEncoder).parameters


def test_hypermapper_still_imports_pkg_resources():
    for module in ("optimizer", "utility_functions"):
        assert "from pkg_resources import resource_stream" in hypermapper_source(module)


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
